package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// rawUpstream answers like a vendor connection that passes the vendor's
// result bytes through (hub.Result.Raw), with Content, Structured and
// IsError saying the same thing.
func rawUpstream(ctx context.Context, c *hub.Call) (*hub.Result, error) {
	city, _ := c.Arguments["city"].(string)
	text := "echo " + city
	switch c.Tool.Def.Name {
	case "echo":
		// Members mcp-go's decoding drops (the vendor's _meta, resultType
		// of a 2026-07-28 vendor, anything else) must not show.
		raw := `{"content":[{"type":"text","text":` + jsonString(text) + `}],"structuredContent":{"n":1,"html":"<b>"},"resultType":"complete","_meta":{"vendor/x":1},"other":[1,{"a":"}"}]}`
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent(text)}, Structured: map[string]any{"n": 1.0, "html": "<b>"}, Raw: []byte(raw)}, nil
	case "fail":
		raw := "{ \"isError\" : true ,\n \"content\" : [ {\"type\":\"text\",\"text\":\"no \\\"luck\\\"\"} ], \"structuredContent\": null }"
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent(`no "luck"`)}, IsError: true, Raw: []byte(raw)}, nil
	case "broken":
		// Raw that is not a result object: the Content is written.
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent(text)}, Raw: []byte(`["not","an","object"]`)}, nil
	}
	return nil, errors.New("no such tool")
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// newFastPair serves one catalog twice: with the fast path and without it
// (every message through mcp-go).
func newFastPair(t testing.TB) (fast, slow *httptest.Server, fs *Server) {
	t.Helper()
	cat := registry.NewCatalog()
	in := json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"}},"additionalProperties":false}`)
	cat.SetVendorTools("weather-a", []registry.ToolDef{{Name: "current_weather", Description: "weather", InputSchema: in}})
	cat.SetVendorTools("raw", []registry.ToolDef{
		{Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "broken", InputSchema: json.RawMessage(`{"type":"object"}`)},
	})
	cat.SetVendorTools("down", []registry.ToolDef{{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	cat.SetCapabilities([]registry.Capability{{Name: "weather.current", InputSchema: in, Chain: []registry.ChainStep{{Tool: "weather-a/current_weather"}}}})
	ups := upstreams{
		"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			return &hub.Result{Content: []mcp.Content{
				mcp.NewTextContent("sunny in " + c.Arguments["city"].(string)),
				mcp.NewImageContent("iVBORw0KGgo=", "image/png"),
			}, Structured: map[string]any{"temp_c": 20.5}}, nil
		},
		"raw": rawUpstream,
	}
	var servers [2]*Server
	for i, off := range []bool{false, true} {
		s := NewServer(hub.NewGateway(cat, ups, nil), &Options{MaxBodyBytes: 64 << 10, DisableFastPath: off})
		t.Cleanup(func() { s.Close() })
		servers[i] = s
	}
	fast, slow = httptest.NewServer(servers[0]), httptest.NewServer(servers[1])
	t.Cleanup(fast.Close)
	t.Cleanup(slow.Close)
	return fast, slow, servers[0]
}

// mcpSession initializes a session on url and returns its id.
func mcpSession(t testing.TB, url string, caps string) string {
	t.Helper()
	hdr, _, _ := post2(t, url, "", nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}}`)
	sid := hdr.Get(server.HeaderKeySessionID)
	if sid == "" {
		t.Fatalf("initialize on %s: no session id", url)
	}
	post2(t, url, sid, nil, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

func post2(t testing.TB, url, sid string, hdr map[string]string, body string) (http.Header, int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(server.HeaderKeySessionID, sid)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Header, resp.StatusCode, b
}

// wire is an answer as a client sees it, with what differs per call
// (call ids, latencies) taken out.
type wire struct {
	Status      int
	ContentType string
	Messages    []any
}

func answer(hdr http.Header, status int, body []byte) wire {
	w := wire{Status: status, ContentType: hdr.Get("Content-Type")}
	var chunks [][]byte
	if strings.HasPrefix(w.ContentType, "text/event-stream") {
		for _, line := range bytes.Split(body, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				chunks = append(chunks, d)
			}
		}
	} else if len(bytes.TrimSpace(body)) > 0 {
		chunks = append(chunks, body)
	}
	for _, c := range chunks {
		var v any
		if err := json.Unmarshal(c, &v); err != nil {
			w.Messages = append(w.Messages, "not JSON: "+string(c))
			continue
		}
		w.Messages = append(w.Messages, scrub(v))
	}
	return w
}

func scrub(v any) any {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "call_id")
		delete(v, "latency_ms")
		for k, x := range v {
			v[k] = scrub(x)
		}
	case []any:
		for i, x := range v {
			v[i] = scrub(x)
		}
	}
	return v
}

// TestFastPathMatchesMCPGo sends the same requests through the fast path
// and through mcp-go's server and compares what a client gets.
func TestFastPathMatchesMCPGo(t *testing.T) {
	fast, slow, fs := newFastPair(t)
	call := func(id, name, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
	}
	tests := []struct {
		name, path, body string
		hdr              map[string]string
		noSession        bool
		caps             string
		fast             bool // answered on the fast path
	}{
		{name: "list", path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, fast: true},
		{name: "list, params {}", path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, fast: true},
		{name: "call", path: "/mcp", body: call("2", "weather-a__current_weather", `{"city":"Paris"}`), fast: true},
		{name: "string id", path: "/mcp", body: call(`"a-1"`, "weather-a__current_weather", `{"city":"Paris"}`), fast: true},
		{name: "float id", path: "/mcp", body: call(`1.0`, "weather-a__current_weather", `{"city":"Paris"}`), fast: true},
		{name: "exponent id", path: "/mcp", body: call(`1e2`, "weather-a__current_weather", `{"city":"Paris"}`), fast: true},
		{name: "huge id", path: "/mcp", body: call(`12345678901234567890`, "weather-a__current_weather", `{"city":"Paris"}`), fast: true},
		{name: "escaped id", path: "/mcp", body: call(`"<\u00e9\"&>"`, "weather-a__current_weather", `{"city":"Paris"}`), fast: true},
		{name: "capability", path: "/mcp", body: call("3", "weather_current", `{"city":"Oslo"}`), fast: true},
		{name: "capability alias", path: "/mcp", body: call("3", "weather.current", `{"city":"Oslo"}`), fast: true},
		{name: "raw result", path: "/mcp", body: call("4", "raw__echo", `{"city":"Paris"}`), fast: true},
		{name: "raw tool error", path: "/mcp", body: call("4", "raw__fail", `{}`), fast: true},
		{name: "raw not an object", path: "/mcp", body: call("4", "raw__broken", `{"city":"Rome"}`), fast: true},
		{name: "null arguments", path: "/mcp", body: call("4", "raw__echo", `null`), fast: true},
		{name: "no arguments", path: "/mcp", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"raw__echo"}}`, fast: true},
		{name: "gateway error", path: "/mcp", body: call("5", "down__x", `{}`), fast: true},
		{name: "data level", path: "/mcp", body: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"raw__echo","arguments":{},"_meta":{"toolhub/data_level":0,"k":"v"}}}`, fast: true},
		{name: "bad data level", path: "/mcp", body: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"raw__echo","arguments":{},"_meta":{"toolhub/data_level":99}}}`, fast: true},
		{name: "repeated params", path: "/mcp", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"raw__echo","arguments":{"city":"A"}},"params":{"name":"raw__echo"}}`},
		{name: "upper-case keys", path: "/mcp", body: `{"JSONRPC":"2.0","ID":8,"METHOD":"tools/call","Params":{"Name":"raw__echo","Arguments":{"city":"B"}}}`, fast: true},
		{name: "vendor call", path: "/mcp/vendors/raw", body: call("9", "echo", `{"city":"Paris"}`), fast: true},
		{name: "vendor list", path: "/mcp/vendors/raw", body: `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, fast: true},

		// Protocol revision 2026-07-28: stateless, no session needed.
		{name: "2026 call", path: "/mcp", body: modern("20", "weather-a__current_weather", `{"city":"Paris"}`, `{}`), hdr: modernHdr("weather-a__current_weather"), noSession: true, fast: true},
		{name: "2026 raw", path: "/mcp", body: modern(`"r"`, "raw__echo", `{"city":"Paris"}`, `{}`), hdr: modernHdr("raw__echo"), fast: true},
		{name: "2026 raw tool error", path: "/mcp", body: modern("21", "raw__fail", `{}`, `{}`), hdr: modernHdr("raw__fail"), noSession: true, fast: true},
		{name: "2026 raw not an object", path: "/mcp", body: modern("21", "raw__broken", `{}`, `{}`), hdr: modernHdr("raw__broken"), noSession: true, fast: true},
		{name: "2026 gateway error", path: "/mcp", body: modern("22", "down__x", `{}`, `{}`), hdr: modernHdr("down__x"), noSession: true, fast: true},
		{name: "2026 capability", path: "/mcp", body: modern("22", "weather_current", `{"city":"Oslo"}`, `{}`), hdr: modernHdr("weather_current"), noSession: true, fast: true},
		{name: "2026 vendor call", path: "/mcp/vendors/raw", body: modern("23", "echo", `{"city":"Oslo"}`, `{}`), hdr: modernHdr("echo"), noSession: true, fast: true},
		{name: "2026 no Mcp-Name", path: "/mcp", body: modern("24", "raw__echo", `{}`, `{}`), hdr: map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728, mcp.HeaderMethod: "tools/call"}, noSession: true},
		{name: "2026 wrong Mcp-Name", path: "/mcp", body: modern("24", "raw__echo", `{}`, `{}`), hdr: modernHdr("raw__fail"), noSession: true},
		{name: "2026 no capabilities", path: "/mcp", body: `{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"raw__echo","arguments":{},"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"2026-07-28"}}}`, hdr: modernHdr("raw__echo"), noSession: true},
		{name: "2026 sampling client", path: "/mcp", body: modern("24", "raw__echo", `{}`, `{"sampling":{}}`), hdr: modernHdr("raw__echo"), noSession: true},
		{name: "2026 no header", path: "/mcp", body: modern("24", "raw__echo", `{}`, `{}`), noSession: true},
		{name: "2026 list", path: "/mcp", body: `{"jsonrpc":"2.0","id":25,"method":"tools/list","params":{"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"2026-07-28","` + mcp.MetaKeyClientCapabilities + `":{}}}}`, hdr: map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728, mcp.HeaderMethod: "tools/list"}, noSession: true},

		// Refused before the MCP server, the same way on both.
		{name: "unknown tool", path: "/mcp", body: call("10", "nope__x", `{}`)},
		{name: "schema violation", path: "/mcp", body: call("10", "weather-a__current_weather", `{"city":3}`)},
		{name: "arguments not an object", path: "/mcp", body: call("10", "weather-a__current_weather", `[1]`)},
		{name: "params not an object", path: "/mcp", body: `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":"x"}`},
		{name: "no tool name", path: "/mcp", body: `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{}}`},
		{name: "vendor path, catalog name", path: "/mcp/vendors/raw", body: call("10", "raw__echo", `{}`)},

		// Left to mcp-go.
		{name: "null id", path: "/mcp", body: call("null", "raw__echo", `{}`)},
		{name: "object id", path: "/mcp", body: call(`{"a":1}`, "raw__echo", `{}`)},
		{name: "bool id", path: "/mcp", body: call(`true`, "raw__echo", `{}`)},
		{name: "old jsonrpc", path: "/mcp", body: `{"jsonrpc":"1.0","id":11,"method":"tools/list"}`},
		{name: "a response", path: "/mcp", body: `{"jsonrpc":"2.0","id":11,"method":"tools/list","result":{}}`},
		{name: "progress token", path: "/mcp", body: `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"raw__echo","arguments":{},"_meta":{"progressToken":"p1"}}}`},
		{name: "task", path: "/mcp", body: `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"raw__echo","arguments":{},"task":{"ttl":1000}}}`},
		{name: "cursor", path: "/mcp", body: `{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{"cursor":"eA=="}}`},
		{name: "bad _meta", path: "/mcp", body: `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"raw__echo","arguments":{},"_meta":[1]}}`},
		{name: "no session", path: "/mcp", body: call("13", "raw__echo", `{}`), noSession: true},
		{name: "unknown session", path: "/mcp", body: call("13", "raw__echo", `{}`), hdr: map[string]string{server.HeaderKeySessionID: "mcp-session-6f9619ff-8b86-d011-b42d-00c04fc964ff"}},
		{name: "bad protocol header", path: "/mcp", body: call("13", "raw__echo", `{}`), hdr: map[string]string{mcp.HeaderProtocolVersion: "1999-01-01"}},
		{name: "2026-07-28 header", path: "/mcp", body: call("13", "raw__echo", `{}`), hdr: map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728}},
		{name: "event-stream only", path: "/mcp", body: call("13", "raw__echo", `{}`), hdr: map[string]string{"Accept": "text/event-stream"}},
		{name: "client declares sampling", path: "/mcp", body: call("13", "raw__echo", `{}`), caps: `{"sampling":{}}`},
		{name: "initialize", path: "/mcp", body: `{"jsonrpc":"2.0","id":14,"method":"ping"}`},
		{name: "not JSON", path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call",`},
	}
	sessions := map[string][2]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caps := tt.caps
			if caps == "" {
				caps = "{}"
			}
			k := tt.path + caps
			sid, ok := sessions[k]
			if !ok {
				sid = [2]string{mcpSession(t, fast.URL+tt.path, caps), mcpSession(t, slow.URL+tt.path, caps)}
				sessions[k] = sid
			}
			if tt.noSession {
				sid = [2]string{}
			}
			before := fs.mcp.fastServed.Load()
			got := answer(post2(t, fast.URL+tt.path, sid[0], tt.hdr, tt.body))
			served := fs.mcp.fastServed.Load() != before
			want := answer(post2(t, slow.URL+tt.path, sid[1], tt.hdr, tt.body))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fast path answers differently from mcp-go (-mcp-go +fast):\n%s", diff)
			}
			if served != tt.fast {
				t.Errorf("answered on the fast path: %v, want %v", served, tt.fast)
			}
			if want.Status == 200 && len(want.Messages) == 0 {
				t.Errorf("no answer: %+v", want)
			}
		})
	}
}

// modern is a 2026-07-28 tools/call (stateless: its _meta says who the
// client is).
func modern(id, name, args, caps string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args +
		`,"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"2026-07-28","` + mcp.MetaKeyClientCapabilities + `":` + caps +
		`,"` + mcp.MetaKeyClientInfo + `":{"name":"t","version":"1"}}}}`
}

func modernHdr(name string) map[string]string {
	return map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728, mcp.HeaderMethod: "tools/call", mcp.HeaderName: name}
}

// TestFastPathRawSpliced checks the bytes of a Raw answer: the vendor's
// members as they came, provenance in _meta, nothing else.
func TestFastPathRawSpliced(t *testing.T) {
	fast, _, _ := newFastPair(t)
	sid := mcpSession(t, fast.URL+"/mcp", "{}")
	hdr, status, body := post2(t, fast.URL+"/mcp", sid, nil, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"raw__echo","arguments":{"city":"Paris"}}}`)
	if status != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", status, hdr.Get("Content-Type"))
	}
	prefix := `{"jsonrpc":"2.0","id":5,"result":{"_meta":{"toolhub/provenance":{"vendor":"raw","tool":"echo","attempts":1,"latency_ms":`
	suffix := `},"content":[{"type":"text","text":"echo Paris"}],"structuredContent":{"n":1,"html":"<b>"}}}` + "\n"
	if !bytes.HasPrefix(body, []byte(prefix)) || !bytes.HasSuffix(body, []byte(suffix)) {
		t.Errorf("answer\n%s\nwant\n%s…%s", body, prefix, suffix)
	}
}

// TestFastPathCancelled: a client's notifications/cancelled ends a call
// in flight on the fast path, as it does one mcp-go runs.
func TestFastPathCancelled(t *testing.T) {
	cat := registry.NewCatalog()
	cat.SetVendorTools("slow", []registry.ToolDef{{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	started := make(chan struct{})
	ups := upstreams{"slow": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	s := NewServer(hub.NewGateway(cat, ups, nil), nil)
	t.Cleanup(func() { s.Close() })
	ts := httptest.NewServer(s)
	defer ts.Close()
	sid := mcpSession(t, ts.URL+"/mcp", "{}")
	done := make(chan []byte)
	go func() {
		_, _, b := post2(t, ts.URL+"/mcp", sid, nil, `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow__wait","arguments":{}}}`)
		done <- b
	}()
	<-started
	post2(t, ts.URL+"/mcp", sid, nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}}`)
	b := <-done
	if !bytes.Contains(b, []byte(`"isError":true`)) || s.mcp.fastServed.Load() != 1 {
		t.Errorf("cancelled call answered %s (fast calls: %d)", b, s.mcp.fastServed.Load())
	}
}

// TestFastPathStreamsNotifications: a vendor's notification during a fast
// call turns the answer into an event stream, as mcp-go's does.
func TestFastPathStreamsNotifications(t *testing.T) {
	cat := registry.NewCatalog()
	cat.SetVendorTools("talk", []registry.ToolDef{{Name: "say", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	ups := upstreams{"talk": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		if p := hub.PeerFrom(ctx); p != nil {
			_ = p.Notify(string(mcp.MethodNotificationProgress), map[string]any{"progressToken": "t", "progress": 1, "message": "<half>"})
		}
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("said")}}, nil
	}}
	var got [2]wire
	for i, off := range []bool{false, true} {
		s := NewServer(hub.NewGateway(cat, ups, nil), &Options{DisableFastPath: off})
		t.Cleanup(func() { s.Close() })
		ts := httptest.NewServer(s)
		t.Cleanup(ts.Close)
		sid := mcpSession(t, ts.URL+"/mcp", "{}")
		got[i] = answer(post2(t, ts.URL+"/mcp", sid, nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"talk__say","arguments":{}}}`))
		if !off && s.mcp.fastServed.Load() != 1 {
			t.Errorf("not answered on the fast path")
		}
	}
	if diff := cmp.Diff(got[1], got[0]); diff != "" {
		t.Errorf("fast path answers differently from mcp-go (-mcp-go +fast):\n%s", diff)
	}
	if len(got[0].Messages) != 2 || got[0].ContentType != "text/event-stream" {
		t.Errorf("answer %+v; want the notification, then the result, as events", got[0])
	}
}

// FuzzFastPathMatchesMCPGo sends random messages on a session through the
// fast path and through mcp-go and compares the answers.
func FuzzFastPathMatchesMCPGo(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"raw__echo","arguments":{"city":"x"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"weather_current","arguments":{"city":3}}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"raw__fail","_meta":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"down__x","arguments":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`[{"jsonrpc":"2.0"}]`, `}{`,
	} {
		f.Add(s, "")
	}
	f.Add(modern("1", "raw__echo", `{"city":"x"}`, `{}`), "raw__echo")
	f.Add(modern(`"x"`, "raw__fail", `{}`, `{"roots":{}}`), "raw__fail")
	f.Add(modern("2", "weather_current", `{"city":1}`, `{}`), "weather_current")
	fast, slow, _ := newFastPair(f)
	sf, ss := mcpSession(f, fast.URL+"/mcp", "{}"), mcpSession(f, slow.URL+"/mcp", "{}")
	f.Fuzz(func(t *testing.T, body, name string) {
		var hdr map[string]string
		if name != "" { // a 2026-07-28 request naming this tool in its headers
			if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Skip("not a header value")
			}
			hdr = modernHdr(name)
		}
		got := answer(post2(t, fast.URL+"/mcp", sf, hdr, body))
		want := answer(post2(t, slow.URL+"/mcp", ss, hdr, body))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: fast path answers differently from mcp-go (-mcp-go +fast):\n%s", body, diff)
		}
	})
}

// BenchmarkFrontDoorToolsCall runs one tools/call through the whole front
// door (admission, body, routing, MCP) in process, against an upstream
// that answers at once: raw passes its result bytes through (Raw), content
// does not. fast is the fast path, mcp-go the path every call took before.
func BenchmarkFrontDoorToolsCall(b *testing.B) {
	cat := registry.NewCatalog()
	in := json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"}},"additionalProperties":false}`)
	cat.SetVendorTools("weather", []registry.ToolDef{{Name: "current_weather", Description: "weather", InputSchema: in}})
	raw := []byte(`{"content":[{"type":"text","text":"Paris: 18°C, partly cloudy, wind 12 km/h"}],"structuredContent":{"city":"Paris","temp_c":18,"sky":"partly cloudy","wind_kmh":12}}`)
	result := func(withRaw bool) *hub.Result {
		r := &hub.Result{Content: []mcp.Content{mcp.NewTextContent("Paris: 18°C, partly cloudy, wind 12 km/h")},
			Structured: map[string]any{"city": "Paris", "temp_c": 18.0, "sky": "partly cloudy", "wind_kmh": 12.0}}
		if withRaw {
			r.Raw = raw
		}
		return r
	}
	for _, path := range []string{"fast", "mcp-go"} {
		for _, proto := range []string{"2025-03-26", "2026-07-28"} {
			for _, withRaw := range []bool{true, false} {
				name := path + "/" + proto + "/content"
				if withRaw {
					name = path + "/" + proto + "/raw"
				}
				benchFrontDoor(b, name, cat, result, path == "mcp-go", proto, withRaw)
			}
		}
	}
}

func benchFrontDoor(b *testing.B, name string, cat *registry.Catalog, result func(bool) *hub.Result, slow bool, proto string, withRaw bool) {
	b.Run(name, func(b *testing.B) {
		ups := upstreams{"weather": func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return result(withRaw), nil }}
		s := NewServer(hub.NewGateway(cat, ups, nil), &Options{DisableFastPath: slow})
		b.Cleanup(func() { s.Close() })
		var hdr map[string]string
		do := func(sid, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequest("POST", "http://127.0.0.1/mcp/vendors/weather", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if sid != "" {
				req.Header.Set(server.HeaderKeySessionID, sid)
			}
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			return rec
		}
		var sid, body string
		if proto == mcp.ProtocolVersion20260728 {
			hdr = modernHdr("current_weather")
			body = modern("7", "current_weather", `{"city":"Paris"}`, `{}`)
		} else {
			rec := do("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+proto+`","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
			sid = rec.Header().Get(server.HeaderKeySessionID)
			do(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"current_weather","arguments":{"city":"Paris"}}}`
		}
		served := s.mcp.fastServed.Load()
		if rec := do(sid, body); rec.Code != 200 || !strings.Contains(rec.Body.String(), "partly cloudy") || (s.mcp.fastServed.Load() != served) == slow {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			do(sid, body)
		}
	})
}
