package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// upstreams stands in for servers.Manager: in-process vendor invokers.
type upstreams map[string]hub.InvokerFunc

func (u upstreams) Upstream(id string) (hub.Invoker, bool) {
	f, ok := u[id]
	return f, ok
}

func newTestServer(t testing.TB) (*Server, *registry.Catalog) {
	t.Helper()
	cat := registry.NewCatalog()
	in := json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"}},"additionalProperties":false}`)
	cat.SetVendorTools("weather-a", []registry.ToolDef{{Name: "current_weather", Description: "weather", InputSchema: in}})
	cat.SetVendorTools("down", []registry.ToolDef{{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	cat.SetCapabilities([]registry.Capability{{Name: "weather.current", InputSchema: in, Chain: []registry.ChainStep{{Tool: "weather-a/current_weather"}}}})
	ups := upstreams{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		return &hub.Result{Content: []mcp.Content{
			mcp.NewTextContent("sunny in " + c.Arguments["city"].(string)),
			mcp.NewImageContent("iVBORw0KGgo=", "image/png"),
		}, Structured: map[string]any{"temp_c": 20.5}}, nil
	}}
	s := NewServer(hub.NewGateway(cat, ups, nil), &Options{MaxBodyBytes: 64 << 10})
	t.Cleanup(func() { s.Close() })
	return s, cat
}

func rpc(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("status %d, body is not JSON: %q", resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

func TestMCPProtocolErrors(t *testing.T) {
	s, _ := newTestServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	call := func(name, args string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
	}
	tests := []struct {
		name, path, body string
		status           int
		code             float64
		dataCode         string
		message          string
	}{
		{"unknown tool", "/mcp", call("nope__x", `{}`), 200, -32602, "unknown_tool", `unknown tool "nope__x"`},
		{"schema violation", "/mcp", call("weather-a__current_weather", `{"city":3}`), 200, -32602, "invalid_arguments", "/city"},
		{"extra field", "/mcp", call("weather_current", `{"city":"x","days":2}`), 200, -32602, "invalid_arguments", "days"},
		{"arguments not an object", "/mcp", call("weather-a__current_weather", `[1]`), 200, -32602, "invalid_arguments", "JSON object"},
		{"vendor path uses own names", "/mcp/vendors/weather-a", call("weather-a__current_weather", `{"city":"x"}`), 200, -32602, "unknown_tool", "unknown tool"},
		{"too large", "/mcp", call("weather-a__current_weather", `{"city":"`+strings.Repeat("x", 70<<10)+`"}`), 413, -32600, "too_large", "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m := rpc(t, ts.URL+tt.path, tt.body)
			e, _ := m["error"].(map[string]any)
			if status != tt.status || e == nil || e["code"] != tt.code {
				t.Fatalf("status %d, response %v; want %d with JSON-RPC code %v", status, m, tt.status, tt.code)
			}
			data, _ := e["data"].(map[string]any)
			if data["code"] != tt.dataCode || !strings.Contains(e["message"].(string), tt.message) && !strings.Contains(toJSON(data), tt.message) {
				t.Errorf("error = %v; want data.code %s mentioning %q", e, tt.dataCode, tt.message)
			}
		})
	}
	// Malformed JSON-RPC is the MCP server's parse error, never a 500.
	status, m := rpc(t, ts.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":`)
	if status >= 500 || m["error"] == nil {
		t.Errorf("malformed JSON: status %d, %v", status, m)
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestMCPClientListsAndCalls(t *testing.T) {
	s, _ := newTestServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, tc := range []struct{ path, tool string }{{"/mcp", "weather-a__current_weather"}, {"/mcp/vendors/weather-a", "current_weather"}} {
		t.Run(tc.path, func(t *testing.T) {
			c, err := client.NewStreamableHttpClient(ts.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := t.Context()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				t.Fatal(err)
			}
			lr, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range lr.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			want := []string{"down__x", "weather-a__current_weather", "weather_current"}
			if tc.path != "/mcp" {
				want = []string{"current_weather"}
			}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"city": "Oslo"}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || len(res.Content) != 2 {
				t.Fatalf("result = %+v", res)
			}
			if img, ok := mcp.AsImageContent(res.Content[1]); !ok || img.MIMEType != "image/png" {
				t.Errorf("image block did not pass through: %+v", res.Content[1])
			}
			prov, _ := res.Meta.AdditionalFields[MetaProvenance].(map[string]any)
			if prov["vendor"] != "weather-a" || prov["attempts"] != 1.0 {
				t.Errorf("provenance = %v", res.Meta)
			}
			// A vendor that is not connected: a tool error with the typed error in _meta.
			if tc.path == "/mcp" {
				res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "down__x"}})
				if err != nil {
					t.Fatal(err)
				}
				e, _ := res.Meta.AdditionalFields[MetaError].(map[string]any)
				if !res.IsError || e["code"] != "unavailable" {
					t.Errorf("down vendor: isError=%v meta=%v", res.IsError, res.Meta)
				}
			}
		})
	}
}

func TestREST(t *testing.T) {
	s, _ := newTestServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	do := func(method, path, body string) (int, map[string]any, http.Header) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json") // the front door takes JSON bodies only
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("%s %s: body is not JSON: %v", method, path, err)
		}
		return resp.StatusCode, m, resp.Header
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		errCode                  string
	}{
		{"list", "GET", "/v1/tools", "", 200, ""},
		{"openai", "GET", "/v1/tools?format=openai", "", 200, ""},
		{"bad format", "GET", "/v1/tools?format=xml", "", 400, "invalid_request"},
		{"call", "POST", "/v1/tools/weather-a__current_weather/call", `{"arguments":{"city":"Oslo"}}`, 200, ""},
		{"call capability by dotted name", "POST", "/v1/tools/weather.current/call", `{"arguments":{"city":"Oslo"}}`, 200, ""},
		{"schema violation", "POST", "/v1/tools/weather-a__current_weather/call", `{"arguments":{"city":1}}`, 400, "invalid_arguments"},
		{"unknown tool", "POST", "/v1/tools/nope/call", `{}`, 404, "unknown_tool"},
		{"malformed body", "POST", "/v1/tools/weather-a__current_weather/call", `{"arguments":`, 400, "invalid_request"},
		{"unknown field", "POST", "/v1/tools/weather-a__current_weather/call", `{"args":{}}`, 400, "invalid_request"},
		{"vendor down", "POST", "/v1/tools/down__x/call", `{}`, 503, "unavailable"},
		{"too large", "POST", "/v1/tools/down__x/call", `{"arguments":{"a":"` + strings.Repeat("x", 70<<10) + `"}}`, 413, "too_large"},
		{"no route", "GET", "/v2/nothing", "", 400, "invalid_request"},
		{"health", "GET", "/healthz", "", 200, ""},
		{"ready", "GET", "/readyz", "", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m, _ := do(tt.method, tt.path, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, m)
			}
			if tt.errCode != "" {
				e, _ := m["error"].(map[string]any)
				if e["code"] != tt.errCode || e["message"] == "" {
					t.Errorf("error = %v, want code %s", m, tt.errCode)
				}
			}
		})
	}
	_, m, _ := do("POST", "/v1/tools/weather.current/call", `{"arguments":{"city":"Oslo"}}`)
	prov := m["provenance"].(map[string]any)
	if prov["capability"] != "weather.current" || prov["vendor"] != "weather-a" {
		t.Errorf("provenance = %v", prov)
	}
	_, m, _ = do("GET", "/v1/tools?format=openai", "")
	tools := m["tools"].([]any)
	first := tools[0].(map[string]any)["function"].(map[string]any)
	if len(tools) != 3 || first["name"] != "weather_current" {
		t.Errorf("openai tools = %v", tools)
	}
}

func TestCatalogChangesReachMCP(t *testing.T) {
	s, cat := newTestServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	c, err := client.NewStreamableHttpClient(ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	cat.SetVendorTools("maps", []registry.ToolDef{{Name: "route", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	waitForRefresh(s) // the MCP servers follow the catalog off the writer's path
	lr, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(lr.Tools, func(t mcp.Tool) bool { return t.Name == "maps__route" }) {
		t.Fatalf("maps__route is not listed: %v", lr.Tools)
	}
	cat.RemoveVendor("maps")
	waitForRefresh(s)
	if _, m := rpc(t, ts.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"maps__route","arguments":{}}}`); m["error"] == nil {
		t.Fatalf("a removed tool is still callable: %v", m)
	}
}

// waitForRefresh blocks until the MCP front has applied queued changes.
func waitForRefresh(s *Server) {
	done := make(chan struct{})
	s.mcp.changes <- frontMsg{barrier: done}
	<-done
}

func FuzzMCPFrontDoor(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather-a__current_weather","arguments":{"city":"x"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather_current","arguments":{"city":3}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call"}`,
		`[{"jsonrpc":"2.0"}]`, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `}{`,
	} {
		f.Add(s)
	}
	s, _ := newTestServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		resp := s.mcp.precheck("", DefaultTenant, []byte(body))
		if resp != nil && !json.Valid(resp) {
			t.Fatalf("precheck answered invalid JSON %q", resp)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}

func FuzzRESTCall(f *testing.F) {
	f.Add("weather-a__current_weather", `{"arguments":{"city":"x"}}`)
	f.Add("weather.current", `{"arguments":{"city":1}}`)
	f.Add("x", `{"arguments":[]}`)
	f.Add("weather_current", `{"arguments":"{\"city\":\"x\"}"}`)
	f.Add("weather_current", `{"arguments":"[{\"a\":"}`)
	s, _ := newTestServer(f)
	f.Fuzz(func(t *testing.T, name, body string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/tools/x/call", bytes.NewReader([]byte(body)))
		req.SetPathValue("name", name)
		s.callTool(rec, req.WithContext(withTenant(req.Context(), DefaultTenant)))
		if rec.Code >= 500 && rec.Code != 503 {
			t.Fatalf("status %d for %q %q: %s", rec.Code, name, body, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("body is not JSON: %q", rec.Body)
		}
	})
}

func TestDeepJSONRefused(t *testing.T) {
	s, _ := newTestServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	deep := strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100)
	status, m := rpc(t, ts.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather-a__current_weather","arguments":`+deep+`}}`)
	if status != 400 || !strings.Contains(toJSON(m), "nests") {
		t.Errorf("deep MCP body: %d %v", status, m)
	}
	resp, err := http.Post(ts.URL+"/v1/tools/weather-a__current_weather/call", "application/json", strings.NewReader(`{"arguments":`+deep+`}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("deep REST body: status %d", resp.StatusCode)
	}
}

// TestClientCannotSetReservedMeta: a caller's _meta reaches the vendor, but
// never toolhub/job_id, which marks a jobs worker's run of a job (a client
// setting it could have its calls billed once, as re-runs of one job).
func TestClientCannotSetReservedMeta(t *testing.T) {
	cat := registry.NewCatalog()
	cat.SetVendorTools("v", []registry.ToolDef{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	seen := make(chan map[string]any, 2)
	ups := upstreams{"v": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		seen <- c.Meta
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("ok")}}, nil
	}}
	s := NewServer(hub.NewGateway(cat, ups, nil), nil)
	t.Cleanup(func() { s.Close() })
	ts := httptest.NewServer(s)
	defer ts.Close()

	resp, err := http.Post(ts.URL+"/v1/tools/v__t/call", "application/json",
		strings.NewReader(`{"arguments":{},"_meta":{"toolhub/job_id":"forged","toolhub/idempotency_key":"k","trace":"a"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("REST %d", resp.StatusCode)
	}
	c, err := client.NewStreamableHttpClient(ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "v__t"
	req.Params.Arguments = map[string]any{}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"toolhub/job_id": "forged", "toolhub/idempotency_key": "k", "trace": "b"}}
	if _, err := c.CallTool(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	for _, door := range []string{"REST", "MCP"} {
		m := <-seen
		for _, k := range []string{hub.MetaJobID, hub.MetaIdempotencyKey} {
			if _, ok := m[k]; ok {
				t.Errorf("%s: a client's %s reached the gateway: %v", door, k, m)
			}
		}
		if m["trace"] == nil {
			t.Errorf("%s: the client's other _meta was dropped: %v", door, m)
		}
	}
}
