package servers

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// testvendorBin is the stdio test vendor, built once by TestMain.
var testvendorBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "servers-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testvendorBin = filepath.Join(dir, "testvendor")
	if runtime.GOOS == "windows" {
		testvendorBin += ".exe"
	}
	cmd := exec.Command("go", "build", "-o", testvendorBin, "./internal/testvendor")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building testvendor:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// logBuffer collects a manager's log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is a manager on a fresh catalog, with its log captured and its
// status changes recorded.
type harness struct {
	t    *testing.T
	cat  *registry.Catalog
	m    *Manager
	logs *logBuffer

	mu      sync.Mutex
	changes []VendorStatus
}

// fastBackoff keeps restarts quick in tests.
var fastBackoff = Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}

func newHarness(t *testing.T, opts *Options) *harness {
	t.Helper()
	h := &harness{t: t, cat: registry.NewCatalog(), logs: &logBuffer{}}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Logger = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if o.RestartBackoff == (Backoff{}) {
		o.RestartBackoff = fastBackoff
	}
	if o.LookupEnv == nil {
		o.LookupEnv = func(k string) (string, bool) {
			if k == "PATH" {
				return os.LookupEnv(k)
			}
			return "", false
		}
	}
	next := o.OnChange
	o.OnChange = func(st VendorStatus) {
		h.mu.Lock()
		h.changes = append(h.changes, st)
		h.mu.Unlock()
		if next != nil {
			next(st)
		}
	}
	h.m = NewManager(h.cat, &o)
	t.Cleanup(func() {
		if err := h.m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("manager log:\n%s", h.logs.String())
		}
	})
	return h
}

// states returns the states a vendor went through, without repeats.
func (h *harness) states(id string) []State {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []State
	for _, st := range h.changes {
		if st.ID == id && (len(out) == 0 || out[len(out)-1] != st.State) {
			out = append(out, st.State)
		}
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes. Polling a
// condition is not sleeping for timing: the test moves on the moment the
// condition holds, and fails only if it never does.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// waitStatus waits until a vendor's status satisfies cond, and returns it.
func (h *harness) waitStatus(id, what string, cond func(VendorStatus) bool) VendorStatus {
	h.t.Helper()
	var st VendorStatus
	waitFor(h.t, fmt.Sprintf("vendor %q: %s (last status: %+v)", id, what, &st), func() bool {
		st = h.m.Status(id)
		return cond(st)
	})
	return st
}

func (h *harness) waitReady(id string) VendorStatus {
	h.t.Helper()
	return h.waitStatus(id, "ready", func(st VendorStatus) bool { return st.State == StateReady })
}

// call invokes a vendor tool through the manager's invoker, as the gateway does.
func (h *harness) call(ctx context.Context, vendor, tool string, args map[string]any) (*hub.Result, error) {
	h.t.Helper()
	t, ok := h.cat.VendorTool(vendor, tool)
	if !ok {
		h.t.Fatalf("catalog has no tool %q of vendor %q", tool, vendor)
	}
	inv, ok := h.m.Upstream(vendor)
	if !ok {
		h.t.Fatalf("no upstream for vendor %q", vendor)
	}
	return inv.Invoke(ctx, &hub.Call{Tool: t, Arguments: args})
}

// text returns the text content of a result.
func text(r *hub.Result) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
			continue
		}
		parts = append(parts, fmt.Sprintf("%v", c))
	}
	return strings.Join(parts, "")
}

// stdioVendor is a spec for the test vendor.
func stdioVendor(id string, args ...string) registry.Vendor {
	return registry.Vendor{ID: id, MCP: &registry.MCPSpec{Transport: registry.TransportStdio, Command: testvendorBin, Args: args}}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newBufReader(s string, size int) *bufio.Reader {
	return bufio.NewReaderSize(strings.NewReader(s), size)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
