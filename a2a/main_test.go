package a2a

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// peers returns the folder with the installed npm peers (scripts/peers.sh),
// with the A2A test scripts copied next to node_modules.
func peers(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("TOOLHUB_PEERS")
	if dir == "" {
		dir = "../.cache/peers"
	}
	dir, _ = filepath.Abs(dir)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		tb.Fatalf("npm peers with @a2a-js/sdk are not installed in %s (run `bash scripts/peers.sh`): %v", dir, err)
	}
	for _, f := range []string{"agent.mjs", "client.mjs"} {
		src, err := os.ReadFile(filepath.Join("..", "test", "peers", "a2a", f))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "a2a-"+f), src, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// jsAgent is the @a2a-js/sdk test agent (test/peers/a2a/agent.mjs).
type jsAgent struct {
	URL string // base URL
}

func startJSAgent(tb testing.TB) *jsAgent {
	tb.Helper()
	dir := peers(tb)
	cmd := exec.Command("node", "a2a-agent.mjs")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	tb.Cleanup(func() {
		stdin.Close() // the agent exits at EOF
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case line, ok := <-lines:
		var ev struct{ Event, URL string }
		if !ok || json.Unmarshal([]byte(line), &ev) != nil || ev.URL == "" {
			tb.Fatalf("the A2A agent did not start: %q", line)
		}
		return &jsAgent{URL: ev.URL}
	case <-time.After(30 * time.Second):
		tb.Fatal("the A2A agent did not start within 30s")
	}
	return nil
}

// control sets the agent's fault mode ("ok", "429").
func (a *jsAgent) control(tb testing.TB, mode string) {
	tb.Helper()
	resp, err := http.Post(a.URL+"/_control", "application/json", strings.NewReader(`{"mode":"`+mode+`"}`))
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
}

// canceled returns the task ids the agent was asked to cancel.
func (a *jsAgent) canceled(tb testing.TB) []string {
	tb.Helper()
	resp, err := http.Get(a.URL + "/_control")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ Canceled []string }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		tb.Fatal(err)
	}
	return st.Canceled
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func a2aSpec(id, card string) registry.Vendor {
	return registry.Vendor{ID: id, A2A: &registry.A2ASpec{Card: card}}
}

// addReady adds a vendor and waits for its card.
func addReady(tb testing.TB, m *Manager, spec registry.Vendor) {
	tb.Helper()
	ctx := context.Background()
	if err := m.Add(ctx, spec); err != nil {
		tb.Fatal(err)
	}
	if err := m.Refresh(ctx, spec.ID); err != nil {
		tb.Fatal(err)
	}
	if st := m.Status(spec.ID); st.State != StateReady {
		tb.Fatalf("vendor %s not ready: %+v", spec.ID, st)
	}
}

func errCode(err error) (hub.Code, *hub.Error) {
	var e *hub.Error
	if errors.As(err, &e) {
		return e.Code, e
	}
	return "", nil
}
