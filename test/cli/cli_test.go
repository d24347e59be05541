// Package cli tests the toolhub command as a user runs it: the binary,
// built once, against real `toolhub serve` processes and example vendors.
package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
	"github.com/toolhub/toolhub/test/harness"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolhub-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "toolhub")
	// As make build: -buildvcs=true, so `toolhub version` reads the revision
	// from the build info whatever GOFLAGS says, and main.revision for a git
	// worktree, where Go records none.
	if err := drilltest.BuildBinary(context.Background(), "../..", bin, "-buildvcs=true", "-ldflags", "-X main.revision="+gitHead()); err != nil {
		fmt.Fprintln(os.Stderr, "build toolhub:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// th runs the toolhub binary with env added and returns its stdout,
// stderr and exit status.
func th(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(os.Environ(), "TOOLHUB_KEY=", "TOOLHUB_URL=", "TOOLHUB_CONFIG=")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// serveVendors serves example vendors on a loopback port.
func serveVendors(t *testing.T, names ...string) (string, map[string]*vendors.Vendor) {
	t.Helper()
	opts := map[string]*vendors.Options{}
	for _, n := range names {
		opts[n] = nil
	}
	vs, addr, closeAll, err := vendors.ServeVendors(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	return addr, vs
}

// startHub runs `toolhub serve` with cfg and waits for it to listen and
// for the vendors named in ready.
func startHub(t *testing.T, cfg string, data string, ready ...string) *drill.Process {
	t.Helper()
	return harness.StartHub(t, bin, harness.Hub{Config: harness.WriteConfig(t, cfg), Data: data, Ready: ready})
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"misspelt vendors subcommand", []string{"vendors", "remvoe", "x"}, 2, nil, []string{`unknown subcommand "remvoe"`, "Usage: toolhub vendors"}},
		{"misspelt keys subcommand", []string{"keys", "craete"}, 2, nil, []string{`unknown subcommand "craete"`, "Usage: toolhub keys"}},
		{"rollback without a version", []string{"vendors", "rollback", "weather-a"}, 2, nil, []string{"--version N", "toolhub vendors versions weather-a"}},
		{"approve without an id", []string{"vendors", "approve"}, 2, nil, []string{"Usage: toolhub vendors approve"}},
		{"help", []string{"--help"}, 0, []string{"Usage:", "toolhub config"}, nil},
		{"a command's help", []string{"vendors", "add", "--help"}, 0, []string{"--command", "--arg"}, nil},
		{"call's help", []string{"call", "-h"}, 0, []string{"-timeout"}, nil},
		{"unknown config subcommand", []string{"config", "frob"}, 2, nil, []string{`unknown subcommand "frob"`, "toolhub config check"}},
		{"add with two sources", []string{"vendors", "add", "v", "--url", "http://127.0.0.1:1/mcp", "--command", "x"}, 1, nil, []string{"give one of --url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := th(t, nil, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout does not say %q:\n%s", s, out)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr does not say %q:\n%s", s, errOut)
				}
			}
			if tt.code == 0 && errOut != "" {
				t.Errorf("help wrote to stderr: %s", errOut)
			}
		})
	}
}

// gitHead is the commit checked out ("" outside a git repository).
func gitHead() string {
	out, err := exec.Command("git", "rev-parse", "-q", "--verify", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestVersionFromBuildInfo: `toolhub version` prints what the toolchain
// recorded in the binary (`go version -m`): the module version and the
// commit, git's HEAD — the build info's vcs.revision, or in a git worktree
// (whose .git is a file, so Go stamps nothing) the main.revision the build
// set, as make build does.
func TestVersionFromBuildInfo(t *testing.T) {
	m, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var mod, rev string
	for _, l := range strings.Split(string(m), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			mod = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			rev = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	out, errOut, code := th(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "toolhub "+mod+" (") || strings.Contains(out, "dev\n") {
		t.Fatalf("toolhub version: %d %q %s; want module version %q", code, out, errOut, mod)
	}
	head := gitHead()
	if head == "" {
		if rev != "" || !strings.Contains(out, "no VCS revision") {
			t.Errorf("a build outside git: stamped %q, printed %q", rev, out)
		}
		return
	}
	if rev != "" && rev != head {
		t.Errorf("build info vcs.revision %s, HEAD %s", rev, head)
	}
	if !strings.Contains(out, "(revision "+head) {
		t.Errorf("toolhub version %q: want revision %s (HEAD)", out, head)
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("addr: 127.0.0.1:8080\ntimeout: 5\nadr: x\nbilling:\n  cache_price: lots\n"), 0o600)
	out, errOut, code := th(t, nil, "config", "check", "--config", bad)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{bad + `:2: timeout: duration "5"`, bad + `:3: unknown key "adr"`, bad + ":5: billing.cache_price", "3 problem(s)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "type config.") {
		t.Errorf("a Go type name in a problem:\n%s", errOut)
	}
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("addr: 127.0.0.1:8080\ntimeout: 5s\n"), 0o600)
	if out, errOut, code := th(t, nil, "config", "check", "--config", good); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("a good config: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := th(t, nil, "config", "check", "--config", filepath.Join(dir, "missing.yaml")); code != 1 || !strings.Contains(errOut, "missing.yaml") {
		t.Errorf("a missing file: %d %s %s", code, out, errOut)
	}
}
