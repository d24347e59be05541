package servers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// fault answers a request instead of the MCP server when it returns true.
type fault func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool

// httpVendor is an in-process mcp-go server over streamable HTTP or SSE,
// behind a handler that records requests and can inject faults.
type httpVendor struct {
	t     *testing.T
	srv   *server.MCPServer
	inner http.Handler
	ts    *httptest.Server
	path  string

	mu      sync.Mutex
	faults  map[string]fault // by JSON-RPC method
	headers []http.Header
	methods map[string]int
}

func newMCPServer(opts ...server.ServerOption) *server.MCPServer {
	opts = append([]server.ServerOption{server.WithToolCapabilities(true)}, opts...)
	s := server.NewMCPServer("httpvendor", "2.0.0", opts...)
	echo := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t := req.GetString("text", "")
		return mcp.NewToolResultStructured(map[string]any{"text": t}, t), nil
	}
	s.AddTool(mcp.NewToolWithRawSchema("echo", "Echoes text.", json.RawMessage(
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"anyOf":[{"required":["text"]}]}`)), echo)
	s.AddTool(mcp.NewTool("slow", mcp.WithNumber("ms")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t := time.NewTimer(time.Duration(req.GetFloat("ms", 0)) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return mcp.NewToolResultText("done"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	for i := range 3 {
		s.AddTool(mcp.NewTool(fmt.Sprintf("extra%d", i)), echo)
	}
	return s
}

// newHTTPVendor serves srv over transport ("http" or "sse").
func newHTTPVendor(t *testing.T, transport string, srv *server.MCPServer) *httpVendor {
	t.Helper()
	hv := &httpVendor{t: t, srv: srv, faults: map[string]fault{}, methods: map[string]int{}}
	switch transport {
	case registry.TransportHTTP:
		hv.inner, hv.path = server.NewStreamableHTTPServer(srv), "/mcp"
	case registry.TransportSSE:
		hv.inner, hv.path = server.NewSSEServer(srv), "/sse"
	}
	hv.ts = httptest.NewServer(hv)
	t.Cleanup(func() {
		// Streams (subscriptions/listen, SSE) outlive a graceful close.
		hv.ts.CloseClientConnections()
		hv.ts.Close()
	})
	return hv
}

func (hv *httpVendor) url() string { return hv.ts.URL + hv.path }

func (hv *httpVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		_ = json.Unmarshal(body, &msg)
	}
	hv.mu.Lock()
	hv.headers = append(hv.headers, r.Header.Clone())
	hv.methods[msg.Method]++
	f := hv.faults[msg.Method]
	hv.mu.Unlock()
	if f != nil && f(w, r, msg.ID) {
		return
	}
	hv.inner.ServeHTTP(w, r)
}

func (hv *httpVendor) setFault(method string, f fault) {
	hv.mu.Lock()
	defer hv.mu.Unlock()
	if f == nil {
		delete(hv.faults, method)
	} else {
		hv.faults[method] = f
	}
}

func (hv *httpVendor) count(method string) int {
	hv.mu.Lock()
	defer hv.mu.Unlock()
	return hv.methods[method]
}

func httpSpec(id, transport, url string) registry.Vendor {
	return registry.Vendor{ID: id, MCP: &registry.MCPSpec{Transport: transport, URL: url}}
}

func TestHTTPAndSSEServeTools(t *testing.T) {
	for _, tr := range []string{registry.TransportHTTP, registry.TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, nil)
			hv := newHTTPVendor(t, tr, newMCPServer())
			if err := h.m.Add(context.Background(), httpSpec("hv", tr, hv.url())); err != nil {
				t.Fatal(err)
			}
			st := h.waitReady("hv")
			if st.Tools != 5 || st.Transport != tr || st.Server != "httpvendor/2.0.0" {
				t.Errorf("status = %+v", st)
			}
			t.Logf("%s: protocol %s", tr, st.Protocol)
			echo, _ := h.cat.VendorTool("hv", "echo")
			if echo == nil || !strings.Contains(string(echo.Def.InputSchema), "anyOf") {
				t.Errorf("echo schema lost anyOf: %v", echo)
			}
			r, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "hello"})
			if err != nil || text(r) != "hello" {
				t.Fatalf("echo = %v, %v", r, err)
			}
			concurrentCalls(t, h, "hv")

			// tools/list_changed: a tool added at the server reaches the catalog.
			hv.srv.AddTool(mcp.NewTool("late"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("late"), nil
			})
			waitFor(t, "the new tool in the catalog", func() bool {
				_, ok := h.cat.VendorTool("hv", "late")
				return ok
			})
			if r, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "late", nil); err != nil || text(r) != "late" {
				t.Errorf("late = %v, %v", r, err)
			}
			hv.srv.DeleteTools("late")
			waitFor(t, "the deleted tool gone from the catalog", func() bool {
				_, ok := h.cat.VendorTool("hv", "late")
				return !ok
			})
		})
	}
}

// A server that speaks only a handshake revision pushes list_changed on the
// standalone GET stream; the manager re-dials with it.
func TestHTTPLegacyListChanged(t *testing.T) {
	h := newHarness(t, &Options{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION})
	hv := newHTTPVendor(t, registry.TransportHTTP, newMCPServer())
	if err := h.m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, hv.url())); err != nil {
		t.Fatal(err)
	}
	if st := h.waitReady("hv"); st.Protocol != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Fatalf("protocol %q", st.Protocol)
	}
	hv.srv.AddTool(mcp.NewTool("late"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("late"), nil
	})
	waitFor(t, "the new tool in the catalog", func() bool {
		_, ok := h.cat.VendorTool("hv", "late")
		return ok
	})

	// A 404 on a legacy session means the vendor forgot it (it restarted):
	// the call fails as unavailable and the manager re-dials.
	var once sync.Once
	hv.setFault("tools/call", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
		hit := false
		once.Do(func() { hit = true; http.NotFound(w, r) })
		return hit
	})
	_, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "x"})
	if c := hub.CodeOf(err); c != hub.CodeUnavailable {
		t.Errorf("404: code %q (%v); want unavailable", c, err)
	}
	h.waitStatus("hv", "re-dialled", func(s VendorStatus) bool { return s.State == StateReady && s.Restarts == 1 })
	if _, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "x"}); err != nil {
		t.Errorf("after re-dial: %v", err)
	}
}

func TestHTTPPaging(t *testing.T) {
	h := newHarness(t, nil)
	hv := newHTTPVendor(t, registry.TransportHTTP, newMCPServer(server.WithPaginationLimit(2)))
	if err := h.m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, hv.url())); err != nil {
		t.Fatal(err)
	}
	if st := h.waitReady("hv"); st.Tools != 5 {
		t.Errorf("tools = %d; want 5", st.Tools)
	}
	if n := hv.count("tools/list"); n != 3 {
		t.Errorf("tools/list requests = %d; want 3 pages", n)
	}
}

// rewriteResult runs the real server and edits the JSON-RPC result it
// answers (JSON or an SSE stream).
func rewriteResult(inner http.Handler, edit func(result map[string]any)) fault {
	return func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
		// A cursor of ours means nothing to the server: ask for page 1.
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if json.Unmarshal(body, &req) == nil {
			if p, ok := req["params"].(map[string]any); ok && p["cursor"] == "again" {
				delete(p, "cursor")
				body, _ = json.Marshal(req)
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		editMsg := func(b []byte) []byte {
			var m map[string]any
			if json.Unmarshal(b, &m) != nil {
				return b
			}
			if res, ok := m["result"].(map[string]any); ok {
				edit(res)
			}
			out, _ := json.Marshal(m)
			return out
		}
		body = rec.Body.Bytes()
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
			var out bytes.Buffer
			sc := bufio.NewScanner(bytes.NewReader(body))
			for sc.Scan() {
				line := sc.Bytes()
				if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					line = append([]byte("data: "), editMsg(d)...)
				}
				out.Write(line)
				out.WriteByte('\n')
			}
			body = out.Bytes()
		} else {
			body = editMsg(body)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		w.Write(body)
		return true
	}
}

func TestHTTPToolListCursorLoop(t *testing.T) {
	h := newHarness(t, nil)
	hv := newHTTPVendor(t, registry.TransportHTTP, newMCPServer())
	hv.setFault("tools/list", rewriteResult(hv.inner, func(res map[string]any) { res["nextCursor"] = "again" }))
	if err := h.m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, hv.url())); err != nil {
		t.Fatal(err)
	}
	st := h.waitStatus("hv", "unavailable", func(s VendorStatus) bool { return s.State == StateUnavailable })
	if !strings.Contains(st.LastError, "repeats cursor") {
		t.Errorf("last error = %q", st.LastError)
	}
	// Fixed at the vendor: the next attempt succeeds.
	hv.setFault("tools/list", nil)
	h.waitReady("hv")
}

// A tool the client cannot decode does not hide the others: the page is
// decoded raw, and the bad definition is left out with an error.
func TestHTTPUndecodableTool(t *testing.T) {
	h := newHarness(t, nil)
	hv := newHTTPVendor(t, registry.TransportHTTP, newMCPServer())
	hv.setFault("tools/list", rewriteResult(hv.inner, func(res map[string]any) {
		tools, _ := res["tools"].([]any)
		res["tools"] = append(tools,
			map[string]any{"name": "numtype", "inputSchema": map[string]any{"type": 5}},
			map[string]any{"name": 42},
		)
	}))
	if err := h.m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, hv.url())); err != nil {
		t.Fatal(err)
	}
	st := h.waitReady("hv")
	if st.Tools != 5 || len(st.Rejected) != 2 {
		t.Errorf("status = %+v; want 5 tools, 2 rejected", st)
	}
}

func statusOf(err error) (int, time.Duration, bool) {
	var s interface {
		HTTPStatus() int
		RetryAfter() time.Duration
	}
	if !errors.As(err, &s) {
		return 0, 0, false
	}
	return s.HTTPStatus(), s.RetryAfter(), true
}

func TestHTTPStatusMapping(t *testing.T) {
	for _, tr := range []string{registry.TransportHTTP, registry.TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, nil)
			hv := newHTTPVendor(t, tr, newMCPServer())
			if err := h.m.Add(context.Background(), httpSpec("hv", tr, hv.url())); err != nil {
				t.Fatal(err)
			}
			h.waitReady("hv")
			ctx := ctxTimeout(t, 10*time.Second)
			gw := hub.NewGateway(h.cat, h.m, nil)

			cases := []struct {
				name       string
				fault      fault
				code       hub.Code
				status     int
				retryAfter time.Duration
			}{
				{"429 with Retry-After", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
					w.Header().Set("Retry-After", "2")
					http.Error(w, "slow down", http.StatusTooManyRequests)
					return true
				}, hub.CodeRateLimited, 429, 2 * time.Second},
				{"429 with an HTTP date", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
					w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
					w.WriteHeader(http.StatusTooManyRequests)
					return true
				}, hub.CodeRateLimited, 429, 90 * time.Second},
				{"503 with a JSON-RPC error body", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusServiceUnavailable)
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"overloaded"}}`, id)
					return true
				}, hub.CodeUnavailable, 503, 0},
				{"502 with a JSON body that is no JSON-RPC error", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadGateway)
					fmt.Fprint(w, `{"message":"upstream down"}`)
					return true
				}, hub.CodeUnavailable, 502, 0},
				{"JSON-RPC error", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
					if tr == registry.TransportSSE {
						return false // answered on the event stream; covered over http
					}
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"vendor broke"}}`, id)
					return true
				}, hub.CodeUpstream, 0, 0},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if c.name == "JSON-RPC error" && tr == registry.TransportSSE {
						t.Skip("answered on the SSE stream")
					}
					hv.setFault("tools/call", c.fault)
					defer hv.setFault("tools/call", nil)

					// Straight through the invoker …
					_, err := h.call(ctx, "hv", "echo", map[string]any{"text": "x"})
					checkErr(t, err, c.code, c.status, c.retryAfter)
					// … and through the gateway, which keeps the error.
					_, err = gw.Call(ctx, &hub.Call{Name: "hv__echo", Arguments: map[string]any{"text": "x"}})
					checkErr(t, err, c.code, c.status, c.retryAfter)
				})
			}
			// Errors from an answering vendor do not end the connection.
			if st := h.m.Status("hv"); st.State != StateReady || st.Restarts != 0 {
				t.Errorf("status = %+v", st)
			}
			if _, err := h.call(ctx, "hv", "echo", map[string]any{"text": "x"}); err != nil {
				t.Errorf("after faults: %v", err)
			}
		})
	}
}

func checkErr(t *testing.T, err error, code hub.Code, status int, retryAfter time.Duration) {
	t.Helper()
	var he *hub.Error
	if !errors.As(err, &he) {
		t.Fatalf("error %v (%T) is not a *hub.Error", err, err)
	}
	if he.Code != code || he.Vendor != "hv" {
		t.Errorf("code %q vendor %q (%v); want %q", he.Code, he.Vendor, err, code)
	}
	gotStatus, gotWait, ok := statusOf(err)
	if status == 0 {
		if ok {
			t.Errorf("unexpected HTTP status %d", gotStatus)
		}
		return
	}
	if !ok || gotStatus != status {
		t.Errorf("HTTPStatus() = %d (found %v); want %d", gotStatus, ok, status)
	}
	if d := gotWait - retryAfter; d < -time.Second || d > time.Second {
		t.Errorf("RetryAfter() = %v; want %v", gotWait, retryAfter)
	}
	if he.RetryAfter != gotWait {
		t.Errorf("hub.Error.RetryAfter = %v; want %v", he.RetryAfter, gotWait)
	}
}

func TestHTTPTimeout(t *testing.T) {
	h := newHarness(t, nil)
	hv := newHTTPVendor(t, registry.TransportHTTP, newMCPServer())
	if err := h.m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, hv.url())); err != nil {
		t.Fatal(err)
	}
	h.waitReady("hv")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := h.call(ctx, "hv", "slow", map[string]any{"ms": 60000})
	if c := hub.CodeOf(err); c != hub.CodeTimeout {
		t.Errorf("code %q (%v); want timeout", c, err)
	}
	// Through the gateway, with the vendor's timeout.
	gw := hub.NewGateway(h.cat, h.m, &hub.Options{Timeout: func(*registry.Tool) time.Duration { return 100 * time.Millisecond }})
	_, err = gw.Call(context.Background(), &hub.Call{Name: "hv__slow", Arguments: map[string]any{"ms": 60000}})
	if c := hub.CodeOf(err); c != hub.CodeTimeout {
		t.Errorf("gateway: code %q (%v); want timeout", c, err)
	}
}

// reserveAddr returns a local address nobody listens on.
func reserveAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// serveAt starts hv's handler on addr.
func serveAt(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s again: %v", addr, err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Listener.Close()
	ts.Listener = l
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts
}

func TestHTTPVendorDownAtStart(t *testing.T) {
	h := newHarness(t, nil)
	addr := reserveAddr(t)
	start := time.Now()
	if err := h.m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, "http://"+addr+"/mcp")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Add took %v", d)
	}
	st := h.waitStatus("hv", "unavailable", func(s VendorStatus) bool { return s.State == StateUnavailable })
	if !strings.Contains(st.LastError, "connection refused") || st.NextAttempt.IsZero() {
		t.Errorf("status = %+v", st)
	}
	// A call fails at once, without waiting for a connection.
	inv, _ := h.m.Upstream("hv")
	tool, err := registry.NewTool("hv", registry.ToolDef{Name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	_, err = inv.Invoke(context.Background(), &hub.Call{Tool: tool})
	if c := hub.CodeOf(err); c != hub.CodeUnavailable {
		t.Errorf("code %q (%v)", c, err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("a call to an unavailable vendor took %v", d)
	}

	hv := &httpVendor{t: t, srv: newMCPServer(), faults: map[string]fault{}, methods: map[string]int{}}
	hv.inner = server.NewStreamableHTTPServer(hv.srv)
	serveAt(t, addr, hv)
	h.waitReady("hv")
	if _, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "x"}); err != nil {
		t.Errorf("after the vendor came up: %v", err)
	}
}

func TestHTTPVendorGoesDownAndComesBack(t *testing.T) {
	for _, tr := range []string{registry.TransportHTTP, registry.TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, &Options{HealthInterval: 20 * time.Millisecond})
			addr := reserveAddr(t)
			hv := &httpVendor{t: t, srv: newMCPServer(), faults: map[string]fault{}, methods: map[string]int{}}
			path := "/mcp"
			if tr == registry.TransportSSE {
				hv.inner, path = server.NewSSEServer(hv.srv), "/sse"
			} else {
				hv.inner = server.NewStreamableHTTPServer(hv.srv)
			}
			ts := serveAt(t, addr, hv)
			if err := h.m.Add(context.Background(), httpSpec("hv", tr, "http://"+addr+path)); err != nil {
				t.Fatal(err)
			}
			h.waitReady("hv")
			ts.CloseClientConnections()
			ts.Close()
			st := h.waitStatus("hv", "unavailable", func(s VendorStatus) bool { return s.State == StateUnavailable })
			if !strings.Contains(st.LastError, "connection lost") {
				t.Errorf("last error %q", st.LastError)
			}
			// Tools stay in the catalog while the vendor is down.
			if _, ok := h.cat.VendorTool("hv", "echo"); !ok {
				t.Errorf("tools left the catalog")
			}
			_, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "x"})
			if c := hub.CodeOf(err); c != hub.CodeUnavailable {
				t.Errorf("code %q (%v)", c, err)
			}
			serveAt(t, addr, hv)
			st = h.waitReady("hv")
			if st.Restarts != 1 {
				t.Errorf("restarts = %d", st.Restarts)
			}
			if _, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "x"}); err != nil {
				t.Errorf("after the vendor came back: %v", err)
			}
		})
	}
}

func TestHTTPSecretsStayHidden(t *testing.T) {
	const secret = "tok-9f8e7d6c5b4a"
	h := newHarness(t, &Options{LookupEnv: func(k string) (string, bool) {
		if k == "TOKEN" {
			return secret, true
		}
		return "", false
	}})
	hv := newHTTPVendor(t, registry.TransportHTTP, newMCPServer())
	spec := httpSpec("hv", registry.TransportHTTP, hv.url())
	spec.MCP.Headers = map[string]string{"Authorization": "Bearer ${TOKEN}"}
	if err := h.m.Add(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	// A second vendor, down, with the secret in its URL: the error text
	// names the URL.
	down := httpSpec("down", registry.TransportHTTP, "http://"+reserveAddr(t)+"/mcp?key=${TOKEN}")
	if err := h.m.Add(context.Background(), down); err != nil {
		t.Fatal(err)
	}
	// A third, whose variable is missing.
	missing := httpSpec("missing", registry.TransportHTTP, hv.url())
	missing.MCP.Headers = map[string]string{"X-Key": "${NOPE}"}
	if err := h.m.Add(context.Background(), missing); err != nil {
		t.Fatal(err)
	}
	h.waitReady("hv")
	st := h.waitStatus("down", "unavailable", func(s VendorStatus) bool { return s.State == StateUnavailable })
	if !strings.Contains(st.LastError, "[redacted]") {
		t.Errorf("last error %q does not show the redaction", st.LastError)
	}
	st = h.waitStatus("missing", "unavailable", func(s VendorStatus) bool { return s.State == StateUnavailable })
	if !strings.Contains(st.LastError, "NOPE is not set") {
		t.Errorf("last error %q does not name the variable", st.LastError)
	}
	if _, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	hv.mu.Lock()
	sent := 0
	for _, hd := range hv.headers {
		if hd.Get("Authorization") == "Bearer "+secret {
			sent++
		}
	}
	total := len(hv.headers)
	hv.mu.Unlock()
	if sent == 0 || sent != total {
		t.Errorf("the expanded header was sent on %d of %d requests; want all", sent, total)
	}
	b, _ := json.Marshal(h.m.Statuses())
	for _, where := range []struct{ name, text string }{{"status", string(b)}, {"log", h.logs.String()}} {
		if strings.Contains(where.text, secret) {
			t.Errorf("the secret is in the %s", where.name)
		}
	}
}
