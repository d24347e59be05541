package security

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

// hubProc is a real `toolhub serve` child process with API keys issued
// beforehand through `toolhub keys create`.
type hubProc struct {
	t    *testing.T
	p    *drill.Process
	url  string
	dir  string
	keys map[string]string // name → token
}

// startHub runs toolhub with cfg (addr and data are added), the
// environment env added to the test's, and keys issued by name (each the
// flags of `toolhub keys create`), and waits until it listens.
func startHub(t *testing.T, cfg string, env []string, keys map[string][]string) *hubProc {
	t.Helper()
	dir := t.TempDir()
	cfgPath, data := filepath.Join(dir, "toolhub.yaml"), filepath.Join(dir, "data")
	if err := os.WriteFile(cfgPath, []byte("addr: 127.0.0.1:0\nlog_level: debug\n"+cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &hubProc{t: t, dir: dir, keys: map[string]string{}}
	for name, args := range keys {
		cmd := exec.Command(toolhubBin, append([]string{"keys", "create", "--config", cfgPath, "--data", data}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("toolhub keys create %v: %v\n%s", args, err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		h.keys[name] = strings.TrimSpace(lines[len(lines)-1])
	}
	p, err := drill.StartProcess(drill.ProcessOptions{Binary: toolhubBin, Config: cfgPath, Data: data, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("toolhub log (tail):\n%s", p.Tail(60))
		}
	})
	if h.url, err = p.WaitListening(t.Context(), 60*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, p.Tail(40))
	}
	return h
}

// do sends a request with the named key ("" for none) and decodes the
// JSON answer; raw is the body as it came.
func (h *hubProc) do(key, method, path string, body any) (status int, m map[string]any, raw []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, h.url+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok, ok := h.keys[key]; ok {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ = io.ReadAll(resp.Body)
	if len(raw) > 0 && json.Unmarshal(raw, &m) != nil {
		m = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, m, raw
}

// register registers a vendor spec (POST), or updates it (PUT) when the
// vendor exists.
func (h *hubProc) register(key, id string, spec any) (int, map[string]any) {
	h.t.Helper()
	st, m, _ := h.do(key, "POST", "/v1/vendors/"+id, spec)
	if st == http.StatusBadRequest && strings.Contains(fmt.Sprint(m), "update it with PUT") {
		st, m, _ = h.do(key, "PUT", "/v1/vendors/"+id, spec)
	}
	return st, m
}

// vendorStatus returns the vendor's entry of GET /v1/vendors, read with
// the named key.
func (h *hubProc) vendorStatus(key, id string) map[string]any {
	h.t.Helper()
	_, m, _ := h.do(key, "GET", "/v1/vendors", nil)
	vs, _ := m["vendors"].([]any)
	for _, v := range vs {
		if v := v.(map[string]any); v["id"] == id {
			return v
		}
	}
	return nil
}

func (h *hubProc) waitReady(key, id string) {
	h.t.Helper()
	drilltest.WaitFor(h.t, 60*time.Second, "vendor "+id+" ready", func() bool {
		st := h.vendorStatus(key, id)
		return st != nil && st["state"] == "ready"
	})
}

// testVendor is an MCP server (mcp-go, streamable HTTP) on loopback that
// records what it receives and can play dead.
type testVendor struct {
	srv  *server.MCPServer
	ts   *httptest.Server
	dead atomic.Bool // every request hangs until its client gives up

	mu      sync.Mutex
	urls    []string       // request URLs, as received
	headers []http.Header  // request headers
	methods map[string]int // JSON-RPC methods received
}

func newTestVendor(t *testing.T, srv *server.MCPServer) *testVendor {
	tv := &testVendor{srv: srv, methods: map[string]int{}}
	inner := server.NewStreamableHTTPServer(srv)
	tv.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Method string `json:"method"`
		}
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			_ = json.Unmarshal(b, &msg)
		}
		tv.mu.Lock()
		tv.urls = append(tv.urls, r.URL.String())
		tv.headers = append(tv.headers, r.Header.Clone())
		tv.methods[msg.Method]++
		tv.mu.Unlock()
		if tv.dead.Load() {
			<-r.Context().Done()
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		tv.ts.CloseClientConnections()
		tv.ts.Close()
	})
	return tv
}

func (tv *testVendor) addr() string { return tv.ts.Listener.Addr().String() }

func (tv *testVendor) count(method string) int {
	tv.mu.Lock()
	defer tv.mu.Unlock()
	return tv.methods[method]
}

// saw reports whether any request the vendor received carried s in its
// URL or a header.
func (tv *testVendor) saw(s string) bool {
	tv.mu.Lock()
	defer tv.mu.Unlock()
	for _, u := range tv.urls {
		if strings.Contains(u, s) {
			return true
		}
	}
	for _, h := range tv.headers {
		for _, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, s) {
					return true
				}
			}
		}
	}
	return false
}
