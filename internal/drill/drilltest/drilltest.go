// Package drilltest helps the tests that run toolhub as child processes
// ([drill.Process]): it builds the binary for TestMain ([BuildBinary]), polls for a
// condition and stops a process, failing the test when either does not
// come.
//
//	func TestMain(m *testing.M) { os.Exit(drilltest.Run(m, "../..", &bin)) }
//
//	h, err := drill.StartProcess(drill.ProcessOptions{Binary: bin, Config: cfg, Data: data})
//	…
//	drilltest.WaitFor(t, 30*time.Second, "job succeeded", func() bool { return drill.JobSucceeded(t.Context(), h.URL(), id) })
//	drilltest.Stop(t, h)
package drilltest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/drill"
)

// Run is for TestMain: it builds toolhub from moduleDir
// ([BuildBinary]) into a temporary folder, sets *bin to it, runs the
// tests, removes the folder and returns the tests' exit code.
//
//	func TestMain(m *testing.M) { os.Exit(drilltest.Run(m, "../..", &toolhubBin)) }
func Run(m *testing.M, moduleDir string, bin *string) int {
	dir, err := os.MkdirTemp("", "toolhub-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "toolhub")
	if err := BuildBinary(context.Background(), moduleDir, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "build toolhub:", err)
		return 1
	}
	return m.Run()
}

// BuildBinary builds the toolhub command of the module in moduleDir
// (`go build -o out flags… ./cmd/toolhub`), for the tests that run it as a
// child process. A failed build's error carries the compiler's output.
// `toolhub drill` never builds: it runs its own executable.
func BuildBinary(ctx context.Context, moduleDir, out string, flags ...string) error {
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/toolhub")...)
	cmd.Dir = moduleDir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/toolhub in %s: %w\n%s", moduleDir, err, b)
	}
	return nil
}

// WaitFor polls cond until it holds, failing the test after d.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition
	}
}

// Stop asks p to shut down (SIGTERM) and waits for it: the test fails
// when p exits with an error, and stops when p is still running 30s later.
func Stop(t testing.TB, p *drill.Process) {
	t.Helper()
	if err := p.Stop(30 * time.Second); errors.Is(err, drill.ErrNotStopped) {
		t.Fatal(err)
	} else if err != nil {
		t.Error(err)
	}
}
