package servers

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/registry"
)

// everythingServer returns the entry point of the npm package
// @modelcontextprotocol/server-everything installed by scripts/peers.sh,
// skipping the test when it or node is missing.
func everythingServer(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../.cache/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skip("server-everything is not installed (run scripts/peers.sh)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	return p
}

// A real vendor from another SDK (TypeScript), over stdio.
func TestInteropServerEverything(t *testing.T) {
	entry := everythingServer(t)
	h := newHarness(t, nil)
	spec := registry.Vendor{ID: "everything", MCP: &registry.MCPSpec{
		Transport: registry.TransportStdio, Command: "node", Args: []string{entry, "stdio"}}}
	if err := h.m.Add(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	st := h.waitReady("everything")
	t.Logf("server %s, protocol %s, %d tools, %d rejected", st.Server, st.Protocol, st.Tools, len(st.Rejected))
	for _, r := range st.Rejected {
		t.Logf("rejected %s: %s: %s", r.Tool, r.Part, r.Error)
	}
	if st.Tools == 0 {
		t.Fatal("no tools")
	}
	r, err := h.call(ctxTimeout(t, 20*time.Second), "everything", "echo", map[string]any{"message": "hello from toolhub"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(r), "hello from toolhub") {
		t.Errorf("echo = %q", text(r))
	}
	concurrentEverything(t, h)
}

func concurrentEverything(t *testing.T, h *harness) {
	t.Helper()
	ctx := ctxTimeout(t, 20*time.Second)
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			_, err := h.call(ctx, "everything", "echo", map[string]any{"message": "x"})
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// The same real vendor over streamable HTTP and SSE. It is added before it
// listens, so the manager's background retry brings it up.
func TestInteropServerEverythingHTTP(t *testing.T) {
	entry := everythingServer(t)
	for _, c := range []struct{ transport, mode, path string }{
		{registry.TransportHTTP, "streamableHttp", "/mcp"},
		{registry.TransportSSE, "sse", "/sse"},
	} {
		t.Run(c.transport, func(t *testing.T) {
			addr := reserveAddr(t)
			port := addr[strings.LastIndex(addr, ":")+1:]
			h := newHarness(t, nil)
			if err := h.m.Add(context.Background(), httpSpec("everything", c.transport, "http://"+addr+c.path)); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("node", entry, c.mode)
			cmd.Env = append(os.Environ(), "PORT="+port)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				cmd.Process.Kill()
				cmd.Wait()
			})
			st := h.waitReady("everything")
			t.Logf("server %s, protocol %s, %d tools, restarts %d", st.Server, st.Protocol, st.Tools, st.Restarts)
			r, err := h.call(ctxTimeout(t, 20*time.Second), "everything", "echo", map[string]any{"message": "hello over " + c.transport})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text(r), "hello over "+c.transport) {
				t.Errorf("echo = %q", text(r))
			}
			concurrentEverything(t, h)
		})
	}
}
