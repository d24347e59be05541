package servers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// wireVendor is an mcp-go server over streamable HTTP that records the
// tools/call requests it receives, body and headers.
type wireVendor struct {
	ts *httptest.Server

	mu      sync.Mutex
	calls   []wireCall
	fault   func(w http.ResponseWriter, id json.RawMessage) bool
	answers chan json.RawMessage // responses to the vendor's own requests (ids "vendor-…")
}

type wireCall struct {
	id     int64
	body   []byte
	header http.Header
}

func newWireVendor(t testing.TB, srv *server.MCPServer) *wireVendor {
	return newWireVendorWith(t, srv, nil)
}

// newWireVendorWith lets setup configure the server before it starts.
func newWireVendorWith(t testing.TB, srv *server.MCPServer, setup func(*httptest.Server)) *wireVendor {
	t.Helper()
	wv := &wireVendor{answers: make(chan json.RawMessage, 8)}
	inner := server.NewStreamableHTTPServer(srv)
	wv.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(body, &msg)
			if msg.Method == "" && bytes.HasPrefix(msg.ID, []byte(`"vendor-`)) {
				wv.answers <- body
				w.WriteHeader(http.StatusAccepted)
				return
			}
			if msg.Method == "tools/call" {
				id, _ := strconv.ParseInt(string(msg.ID), 10, 64)
				wv.mu.Lock()
				wv.calls = append(wv.calls, wireCall{id: id, body: body, header: r.Header.Clone()})
				f := wv.fault
				wv.mu.Unlock()
				if f != nil && f(w, msg.ID) {
					return
				}
			}
		}
		inner.ServeHTTP(w, r)
	}))
	if setup != nil {
		setup(wv.ts) // which may start it itself (StartTLS)
	}
	if wv.ts.URL == "" {
		wv.ts.Start()
	}
	t.Cleanup(func() {
		wv.ts.CloseClientConnections()
		wv.ts.Close()
	})
	return wv
}

func (wv *wireVendor) last(t *testing.T) wireCall {
	t.Helper()
	wv.mu.Lock()
	defer wv.mu.Unlock()
	if len(wv.calls) == 0 {
		t.Fatal("the vendor received no tools/call")
	}
	return wv.calls[len(wv.calls)-1]
}

func (wv *wireVendor) setFault(f func(w http.ResponseWriter, id json.RawMessage) bool) {
	wv.mu.Lock()
	wv.fault = f
	wv.mu.Unlock()
}

// recPeer is an MCP client of a call: it records notifications and
// answers sampling.
type recPeer struct {
	mu    sync.Mutex
	notes []string
}

func (p *recPeer) Declared(string) bool { return true }
func (p *recPeer) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{Model: "m", SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled")}}, nil
}
func (p *recPeer) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, errors.New("no")
}
func (p *recPeer) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///r", Name: "r"}}}, nil
}
func (p *recPeer) Notify(method string, params map[string]any) error {
	b, _ := json.Marshal(params)
	p.mu.Lock()
	p.notes = append(p.notes, method+" "+string(b))
	p.mu.Unlock()
	return nil
}
func (p *recPeer) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.notes...)
}

// streamFault answers a tools/call with an event stream, as a vendor that
// reports progress does: three progress notifications for the call's
// progress token, a log message, a sampling request whose answer it waits
// for (POSTed back on the session), and then the result, which says what
// the sampling answered.
func (wv *wireVendor) streamFault(t *testing.T) func(w http.ResponseWriter, id json.RawMessage) bool {
	return func(w http.ResponseWriter, id json.RawMessage) bool {
		var req struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		_ = json.Unmarshal(wv.last(t).body, &req)
		tok, _ := json.Marshal(req.Params.Meta["progressToken"])
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(w, "event: message\nid: e%d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%d,\"total\":3}}\n\n", i, tok, i)
		}
		// One event split over two data lines, as SSE allows.
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\n")
		fmt.Fprint(w, "data: \"params\":{\"level\":\"info\",\"data\":\"halfway\"}}\r\n\r\n")
		fmt.Fprint(w, ": a comment\n\n")
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"vendor-1\",\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"q\"}}],\"maxTokens\":5}}\n\n")
		fl.Flush()
		var answer struct {
			Result struct {
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		select {
		case b := <-wv.answers:
			_ = json.Unmarshal(b, &answer)
		case <-time.After(10 * time.Second): // a bound on a hang, not a timing
		}
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"asked: %s\"}]}}\n\n", id, answer.Result.Content.Text)
		return true
	}
}

// wireHarness is a manager connected to wv, with or without the fast path.
func wireHarness(t *testing.T, wv *wireVendor, fast bool) *harness {
	return wireHarnessAt(t, wv, fast, "")
}

func wireHarnessAt(t *testing.T, wv *wireVendor, fast bool, protocol string) *harness {
	t.Helper()
	h := newHarness(t, &Options{NoFastPath: !fast, HealthInterval: -1, ProtocolVersion: protocol})
	spec := httpSpec("hv", registry.TransportHTTP, wv.ts.URL)
	spec.MCP.Headers = map[string]string{"Authorization": "Bearer t0ken"}
	if err := h.m.Add(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	h.waitReady("hv")
	return h
}

var idField = regexp.MustCompile(`^\{"jsonrpc":"2.0","id":\d+,`)

// The fast path's tools/call is the request mcp-go's client sends for the
// same call, byte for byte but for the id, with the same headers on the
// same session (on 2026-07-28: with the same _meta and Mcp-Method,
// Mcp-Name headers, and no session); and the result says the same.
func TestFastPathWireMatchesMCPGo(t *testing.T) {
	for _, protocol := range []string{DefaultProtocolVersion, mcp.ProtocolVersion20260728} {
		t.Run(protocol, func(t *testing.T) {
			for _, meta := range []map[string]any{
				{"progressToken": "caller-1", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tenant": "dropped", "n": 12345678901, "o": map[string]any{"<": 1}},
				nil,
			} {
				t.Run(fmt.Sprintf("meta=%v", meta != nil), func(t *testing.T) { wireMatches(t, protocol, meta) })
			}
		})
	}
}

func wireMatches(t *testing.T, protocol string, meta map[string]any) {
	wv := newWireVendor(t, newMCPServer())
	args := map[string]any{"text": "héllo <b>&</b>", "n": 1.5, "nested": map[string]any{"b": 1, "a": []any{1, "2", nil}}}

	type seen struct {
		call wireCall
		res  *hub.Result
	}
	run := func(fast bool) seen {
		h := wireHarnessAt(t, wv, fast, protocol)
		if st := h.m.Status("hv"); st.Protocol != protocol {
			t.Fatalf("protocol %q, want %q", st.Protocol, protocol)
		}
		tool, _ := h.cat.VendorTool("hv", "echo")
		inv, _ := h.m.Upstream("hv")
		ctx := hub.WithPeer(ctxTimeout(t, 10*time.Second), &recPeer{})
		res, err := inv.Invoke(ctx, &hub.Call{Tool: tool, Arguments: args, Meta: meta})
		if err != nil {
			t.Fatalf("fast=%v: %v", fast, err)
		}
		return seen{wv.last(t), res}
	}
	slow, fast := run(false), run(true)

	if slow.call.id >= fastIDBase || fast.call.id < fastIDBase {
		t.Fatalf("ids %d (mcp-go) and %d (fast path): the fast path was not taken", slow.call.id, fast.call.id)
	}
	if !json.Valid(fast.call.body) {
		t.Fatalf("the fast path sent invalid JSON: %s", fast.call.body)
	}
	norm := func(b []byte) string { return idField.ReplaceAllString(string(b), `{"jsonrpc":"2.0","id":0,`) }
	if d := cmp.Diff(norm(slow.call.body), norm(fast.call.body)); d != "" {
		t.Errorf("tools/call body differs from mcp-go's (-mcp-go +fast):\n%s", d)
	}
	for _, k := range []string{"Content-Type", "Accept", "Mcp-Protocol-Version", "Authorization", "User-Agent", "Accept-Encoding", "Mcp-Method", "Mcp-Name"} {
		if s, f := slow.call.header.Values(k), fast.call.header.Values(k); !cmp.Equal(s, f) {
			t.Errorf("header %s: mcp-go %q, fast path %q", k, s, f)
		}
	}
	session := slow.call.header.Get("Mcp-Session-Id") != ""
	if session != !mcp.IsModernProtocol(protocol) || session != (fast.call.header.Get("Mcp-Session-Id") != "") {
		t.Errorf("Mcp-Session-Id: mcp-go %q, fast path %q", slow.call.header.Get("Mcp-Session-Id"), fast.call.header.Get("Mcp-Session-Id"))
	}
	if len(slow.call.header) != len(fast.call.header) {
		t.Errorf("headers: mcp-go %v, fast path %v", slow.call.header, fast.call.header)
	}

	if d := cmp.Diff(slow.res, fast.res, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Raw" }, cmp.Ignore())); d != "" {
		t.Errorf("result differs (-mcp-go +fast):\n%s", d)
	}
	if string(slow.res.Raw) != string(fast.res.Raw) {
		t.Errorf("Raw: mcp-go's path %s, fast path %s", slow.res.Raw, fast.res.Raw)
	}
	var raw struct {
		Content           []map[string]any `json:"content"`
		StructuredContent map[string]any   `json:"structuredContent"`
	}
	if err := json.Unmarshal(fast.res.Raw, &raw); err != nil || raw.StructuredContent["text"] != args["text"] || len(raw.Content) != 1 {
		t.Errorf("Raw = %s (%v); want the vendor's result object", fast.res.Raw, err)
	}
}

// A vendor that answers a call with an event stream gets its progress
// and log notifications relayed to the caller, and its sampling request
// answered by the caller, on the fast path as on mcp-go's.
func TestFastPathRelaysStream(t *testing.T) {
	for _, fast := range []bool{false, true} {
		t.Run(fmt.Sprintf("fast=%v", fast), func(t *testing.T) {
			wv := newWireVendor(t, newMCPServer())
			h := wireHarness(t, wv, fast)
			wv.setFault(wv.streamFault(t))
			inv, _ := h.m.Upstream("hv")
			peer := &recPeer{}
			ctx := hub.WithPeer(ctxTimeout(t, 10*time.Second), peer)

			tool, _ := h.cat.VendorTool("hv", "echo")
			res, err := inv.Invoke(ctx, &hub.Call{Tool: tool, Arguments: map[string]any{}, Meta: map[string]any{"progressToken": "caller-7"}})
			if err != nil || text(res) != "asked: sampled" {
				t.Fatalf("call: %v, %v", res, err)
			}
			if got := wv.last(t).id >= fastIDBase; got != fast {
				t.Fatalf("fast path taken: %v, want %v", got, fast)
			}
			// (The relay writes the notifications' params as mcp-go decodes
			// them, with an empty _meta.)
			want := []string{
				`notifications/progress {"_meta":{},"progress":1,"progressToken":"caller-7","total":3}`,
				`notifications/progress {"_meta":{},"progress":2,"progressToken":"caller-7","total":3}`,
				`notifications/progress {"_meta":{},"progress":3,"progressToken":"caller-7","total":3}`,
				`notifications/message {"_meta":{},"data":"halfway","level":"info"}`,
			}
			if d := cmp.Diff(want, peer.got()); d != "" {
				t.Errorf("notifications relayed (-want +got):\n%s", d)
			}
			if fast && string(res.Raw) != `{"content":[{"type":"text","text":"asked: sampled"}]}` {
				t.Errorf("Raw = %s; want the result from the stream", res.Raw)
			}
		})
	}
}

// Errors are classified the same on both paths: code, message, details,
// HTTP status and Retry-After.
func TestFastPathErrorsMatchMCPGo(t *testing.T) {
	type fault = func(w http.ResponseWriter, id json.RawMessage) bool
	jsonBody := func(status int, body string) fault {
		return func(w http.ResponseWriter, id json.RawMessage) bool {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, body, id)
			return true
		}
	}
	cases := []struct {
		name  string
		fault fault
	}{
		{"429", func(w http.ResponseWriter, id json.RawMessage) bool {
			w.Header().Set("Retry-After", "3")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return true
		}},
		{"401", func(w http.ResponseWriter, id json.RawMessage) bool {
			http.Error(w, "who", http.StatusUnauthorized)
			return true
		}},
		{"400 JSON-RPC error", jsonBody(400, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"bad"}}`)},
		{"503 JSON-RPC error", jsonBody(503, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"overloaded"}}`)},
		{"502 other JSON", jsonBody(502, `{"message":"down %s"}`)},
		{"JSON-RPC error", jsonBody(200, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"vendor broke","data":{"x":1}}}`)},
		{"invalid params", jsonBody(200, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"no such tool"}}`)},
		{"no content", jsonBody(200, `{"jsonrpc":"2.0","id":%s,"result":{"isError":true}}`)},
		{"unknown content", jsonBody(200, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"hologram"}]}}`)},
		{"content not a list", jsonBody(200, `{"jsonrpc":"2.0","id":%s,"result":{"content":{"type":"text"}}}`)},
		{"no id", jsonBody(200, `{"jsonrpc":"2.0","result":{"content":[]}}%.0s`)},
		{"not JSON", jsonBody(200, `{"jsonrpc":"2.0","id":%s,`)},
		{"text/plain", func(w http.ResponseWriter, id json.RawMessage) bool {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "hello")
			return true
		}},
		{"stream without response", func(w http.ResponseWriter, id json.RawMessage) bool {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":1}}\n\n")
			return true
		}},
		{"stream with error", func(w http.ResponseWriter, id json.RawMessage) bool {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32001,\"message\":\"streamed\"}}\n\n", id)
			return true
		}},
	}
	type outcome struct {
		Code       hub.Code
		Message    string
		Details    any
		RetryAfter time.Duration
		Status     int
		RPC        bool
	}
	see := func(err error) outcome {
		var he *hub.Error
		if !errors.As(err, &he) {
			return outcome{Message: fmt.Sprintf("not a hub.Error: %v", err)}
		}
		o := outcome{Code: he.Code, Message: he.Message, Details: he.Details, RetryAfter: he.RetryAfter.Round(time.Second)}
		if s, _, ok := statusOf(err); ok {
			o.Status = s
		}
		var re *RPCError
		o.RPC = errors.As(err, &re)
		return o
	}
	wv := newWireVendor(t, newMCPServer())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Fresh connections: failures in a row add up to a reconnect,
			// which is not what is compared here.
			hs := map[bool]*harness{false: wireHarness(t, wv, false), true: wireHarness(t, wv, true)}
			wv.setFault(c.fault)
			defer wv.setFault(nil)
			var got [2]outcome
			for i, fast := range []bool{false, true} {
				_, err := hs[fast].call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "x"})
				if err == nil {
					t.Fatalf("fast=%v: no error", fast)
				}
				if fast && wv.last(t).id < fastIDBase {
					t.Fatal("the fast path was not taken")
				}
				got[i] = see(err)
			}
			if d := cmp.Diff(got[0], got[1]); d != "" {
				t.Errorf("error differs (-mcp-go +fast):\n%s", d)
			}
			for fast, h := range hs {
				if st := h.m.Status("hv"); st.State != StateReady || st.Restarts != 0 {
					t.Errorf("fast=%v: status %+v", fast, st)
				}
			}
		})
	}
}

// A vendor that forgot the session (404) fails the call as unavailable on
// both paths, and the connection is re-dialled.
func TestFastPathSessionExpired(t *testing.T) {
	wv := newWireVendor(t, newMCPServer())
	h := wireHarness(t, wv, true)
	var once sync.Once
	wv.setFault(func(w http.ResponseWriter, id json.RawMessage) bool {
		hit := false
		once.Do(func() { hit = true; w.WriteHeader(http.StatusNotFound) })
		return hit
	})
	_, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "x"})
	if c := hub.CodeOf(err); c != hub.CodeUnavailable {
		t.Fatalf("404: code %q (%v); want unavailable", c, err)
	}
	if wv.last(t).id < fastIDBase {
		t.Fatal("the fast path was not taken")
	}
	h.waitStatus("hv", "re-dialled", func(s VendorStatus) bool { return s.State == StateReady && s.Restarts == 1 })
	if r, err := h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "x"}); err != nil || text(r) != "x" {
		t.Fatalf("after re-dial: %v, %v", r, err)
	}
}

// decodeResult says what mcp-go's ParseCallToolResult says.
func TestDecodeResultMatchesMCPGo(t *testing.T) {
	for _, raw := range decodeSeeds {
		checkDecode(t, []byte(raw))
	}
}

var decodeSeeds = []string{
	`{"content":[{"type":"text","text":"hi"}]}`,
	`{"content":[{"type":"text","text":"hi","annotations":{"audience":["user"],"priority":0.5},"_meta":{"a":1,"progressToken":"x"}}],"isError":true}`,
	`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"audio","data":"BBBB","mimeType":"audio/wav"}]}`,
	`{"content":[],"structuredContent":{"a":[1,2.5,"x",null,true]}}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":null}`,
	`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":3}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"t"}}]}`,
	`{"content":[{"type":"image","data":""}]}`,
	`{"content":[{"type":"text","text":5}]}`,
	`{"content":[{"type":7}]}`,
	`{"content":null}`,
	`{"isError":true}`,
	`{"resultType":"input_required","inputRequests":{}}`,
	`{"Content":[{"Type":"text","Text":"case"}],"IsError":true}`,
	`{"content":[{"type":"text","text":"a"}],"_meta":{"toolhub/provenance":{"vendor":"evil"},"ok":1}}`,
	`[]`,
	`null`,
	`{"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b"}]}`,
}

func checkDecode(t *testing.T, raw []byte) {
	t.Helper()
	msg := json.RawMessage(raw)
	want, werr := mcp.ParseCallToolResult(&msg)
	got, gerr := decodeResult(raw)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s: mcp-go error %v, decodeResult error %v", raw, werr, gerr)
	}
	if werr != nil {
		if werr.Error() != gerr.Error() {
			t.Fatalf("%s: mcp-go error %q, decodeResult error %q", raw, werr, gerr)
		}
		return
	}
	if d := cmp.Diff(&hub.Result{Content: want.Content, Structured: want.StructuredContent, IsError: want.IsError}, got,
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Raw" }, cmp.Ignore())); d != "" {
		t.Fatalf("%s: (-mcp-go +decodeResult):\n%s", raw, d)
	}
	if got.Raw == nil {
		t.Fatalf("%s: Raw not set", raw)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(got.Raw, &obj); err != nil {
		t.Fatalf("%s: Raw %s: %v", raw, got.Raw, err)
	}
	for key, val := range obj {
		var m map[string]json.RawMessage
		if !strings.EqualFold(key, "_meta") || json.Unmarshal(val, &m) != nil {
			continue
		}
		for k := range m {
			if isOwnKey(k) {
				t.Fatalf("%s: Raw %s keeps toolhub's own _meta key %q", raw, got.Raw, k)
			}
		}
	}
}

// The vendor's _meta reaches Raw, but not keys that are toolhub's own.
func TestRawDropsToolhubMeta(t *testing.T) {
	raw := `{"content":[{"type":"text","text":"a"}],"_meta":{"Toolhub/Provenance":{"vendor":"evil"},"vendor/x":1}}`
	res, err := decodeResult([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(res.Raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"content": []any{map[string]any{"type": "text", "text": "a"}}, "_meta": map[string]any{"vendor/x": 1.0}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Raw (-want +got):\n%s", d)
	}
	plain := `{"content":[{"type":"text","text":"a"}],"_meta":{"vendor/x":1}}`
	if res, _ := decodeResult([]byte(plain)); string(res.Raw) != plain {
		t.Errorf("Raw = %s; want the bytes as received", res.Raw)
	}
}

// A vendor allowed n calls at once keeps n connections alive between
// bursts: the second burst of n concurrent calls opens none (the idle
// pool is sized to the vendor's concurrency limit, above the default 64).
func TestFastPathKeepsConnectionsForConcurrency(t *testing.T) {
	const n = 80
	var (
		newConns atomic.Int64
		mu       sync.Mutex
		waiting  int
		release  = make(chan struct{})
	)
	wv := newWireVendorWith(t, newMCPServer(), func(ts *httptest.Server) {
		ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				newConns.Add(1)
			}
		}
	})
	// Every call of a burst waits until all n are in flight: n connections.
	wv.setFault(func(w http.ResponseWriter, id json.RawMessage) bool {
		mu.Lock()
		waiting++
		if waiting == n {
			close(release)
		}
		ch := release
		mu.Unlock()
		<-ch
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, id)
		return true
	})
	h := newHarness(t, &Options{HealthInterval: -1})
	spec := httpSpec("hv", registry.TransportHTTP, wv.ts.URL)
	spec.Limits.Concurrency = n
	if err := h.m.Add(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	h.waitReady("hv")
	burst := func() {
		mu.Lock()
		waiting, release = 0, make(chan struct{})
		mu.Unlock()
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := h.call(ctxTimeout(t, 30*time.Second), "hv", "echo", map[string]any{"text": "x"}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	burst()
	before := newConns.Load()
	burst()
	if opened := newConns.Load() - before; opened != 0 {
		t.Errorf("the second burst of %d calls opened %d connections; want 0 (all kept alive)", n, opened)
	}
}

// Where calls take mcp-go's path (stdio, SSE, Options.NoFastPath),
// Raw is still the result object as it came, and says what Content,
// Structured and IsError say.
func TestRawOnMCPGoPath(t *testing.T) {
	check := func(t *testing.T, h *harness, vendor string) {
		t.Helper()
		res, err := h.call(ctxTimeout(t, 10*time.Second), vendor, "echo", map[string]any{"text": "raw"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Raw == nil {
			t.Fatal("Raw not set")
		}
		want, err := decodeResult(res.Raw)
		if err != nil {
			t.Fatalf("Raw %s: %v", res.Raw, err)
		}
		if d := cmp.Diff(want, res, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Raw" }, cmp.Ignore())); d != "" {
			t.Errorf("Raw %s says otherwise (-Raw +result):\n%s", res.Raw, d)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		h := newHarness(t, nil)
		if err := h.m.Add(context.Background(), stdioVendor("tv")); err != nil {
			t.Fatal(err)
		}
		h.waitReady("tv")
		check(t, h, "tv")
	})
	t.Run("sse", func(t *testing.T) {
		h := newHarness(t, nil)
		hv := newHTTPVendor(t, registry.TransportSSE, newMCPServer())
		if err := h.m.Add(context.Background(), httpSpec("hv", registry.TransportSSE, hv.url())); err != nil {
			t.Fatal(err)
		}
		h.waitReady("hv")
		check(t, h, "hv")
	})
	t.Run("http without the fast path", func(t *testing.T) {
		wv := newWireVendor(t, newMCPServer())
		h := wireHarness(t, wv, false)
		check(t, h, "hv")
	})
}

// On 2026-07-28, a result that asks for input (a multi round trip) goes to
// the caller as it is, with toolhub's requestState, and the caller's retry
// goes out on the fast path with its inputResponses and the vendor's own
// state; a tool with x-mcp-header parameters goes through mcp-go from the
// start, which mirrors them.
func TestFastPathModernHandsOff(t *testing.T) {
	srv := newMCPServer()
	srv.AddTool(mcp.NewToolWithRawSchema("routed", "", json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("region", "")), nil
		})
	wv := newWireVendor(t, srv)
	h := wireHarnessAt(t, wv, true, mcp.ProtocolVersion20260728)
	inv, _ := h.m.Upstream("hv")
	ctx := hub.WithPeer(ctxTimeout(t, 10*time.Second), &recPeer{})

	t.Run("input required", func(t *testing.T) {
		wv.setFault(func(w http.ResponseWriter, id json.RawMessage) bool {
			if bytes.Contains(wv.last(t).body, []byte(`"inputResponses"`)) {
				return false // the vendor answers the retry
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}},"requestState":"st"}}`, id)
			return true
		})
		defer wv.setFault(nil)
		wv.mu.Lock()
		n := len(wv.calls)
		wv.mu.Unlock()
		tool, _ := h.cat.VendorTool("hv", "echo")
		res, err := inv.Invoke(ctx, &hub.Call{Tool: tool, Arguments: map[string]any{"text": "after input"}})
		if err != nil || res.Input == nil || string(res.Input.Requests) != `{"r":{"method":"roots/list"}}` || res.Input.State == "st" {
			t.Fatalf("%+v, %v", res, err)
		}
		retry := &hub.Call{Tool: tool, Arguments: map[string]any{"text": "after input"},
			Input: &hub.InputResponses{Responses: []byte(`{"r":{"roots":[]}}`), State: res.Input.State}}
		if res, err = inv.Invoke(ctx, retry); err != nil || text(res) != "after input" {
			t.Fatalf("retry: %v, %v", res, err)
		}
		wv.mu.Lock()
		calls := wv.calls[n:]
		wv.mu.Unlock()
		if len(calls) != 2 || calls[0].id < fastIDBase || calls[1].id < fastIDBase ||
			!bytes.Contains(calls[1].body, []byte(`"inputResponses":{"r":{"roots":[]}},"requestState":"st"`)) {
			for _, c := range calls {
				t.Logf("%d %s", c.id, c.body)
			}
			t.Fatalf("want the fast path's call, then its retry with the input and the vendor's state")
		}
		// Without an MCP client to ask, the call fails.
		if _, err := inv.Invoke(ctxTimeout(t, 10*time.Second), &hub.Call{Tool: tool, Arguments: map[string]any{"text": "x"}}); hub.CodeOf(err) != hub.CodeUpstream {
			t.Errorf("no MCP client: %v", err)
		}
	})
	t.Run("x-mcp-header", func(t *testing.T) {
		tool, ok := h.cat.VendorTool("hv", "routed")
		if !ok {
			t.Fatal("routed not in the catalog")
		}
		res, err := inv.Invoke(ctx, &hub.Call{Tool: tool, Arguments: map[string]any{"region": "eu"}})
		if err != nil || text(res) != "eu" {
			t.Fatalf("%v, %v", res, err)
		}
		c := wv.last(t)
		if c.id >= fastIDBase {
			t.Error("the fast path made a call whose arguments are mirrored into headers")
		}
		if got := c.header.Get("Mcp-Param-Region"); got != "eu" {
			t.Errorf("Mcp-Param-Region = %q, want eu (headers %v)", got, c.header)
		}
	})
}

// afterFuncContext is a context that is told of what waits on it through
// its AfterFunc method, as the hub's attempt context is.
type afterFuncContext struct {
	context.Context
	done    chan struct{} // not the embedded context's: as the attempt context's
	watched atomic.Int32
}

func newAfterFuncContext(parent context.Context) *afterFuncContext {
	c := &afterFuncContext{Context: parent, done: make(chan struct{})}
	context.AfterFunc(parent, func() { close(c.done) })
	return c
}

func (c *afterFuncContext) Done() <-chan struct{} { return c.done }

func (c *afterFuncContext) AfterFunc(f func()) func() bool {
	c.watched.Add(1)
	return context.AfterFunc(c.Context, f)
}

// The fast path's call watches the context it is given through its
// AfterFunc (context.WithCancel's way for a parent that has one), not
// with a goroutine of its own each call.
func TestFastPathWatchesItsContextByAfterFunc(t *testing.T) {
	wv := newWireVendor(t, newMCPServer())
	h := wireHarness(t, wv, true)
	ctx := newAfterFuncContext(ctxTimeout(t, 10*time.Second))
	if r, err := h.call(ctx, "hv", "echo", map[string]any{"text": "x"}); err != nil || text(r) != "x" {
		t.Fatalf("call: %v, %v", r, err)
	}
	if wv.last(t).id < fastIDBase {
		t.Fatal("the fast path was not taken")
	}
	if ctx.watched.Load() == 0 {
		t.Fatal("the call's context did not watch the caller's through its AfterFunc")
	}
}
