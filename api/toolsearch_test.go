package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/orchestrator"
	"github.com/toolhub/toolhub/registry"
)

// searchServer is a front door over weather, maps and image tools, with
// tool search by the offline planner's ranking; tenant acme may not see
// secret__weather.
func searchServer(t *testing.T, mcpTool bool) *httptest.Server {
	t.Helper()
	cat := registry.NewCatalog()
	city := json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`)
	cat.SetVendorTools("wx", []registry.ToolDef{{Name: "current_weather", Description: "Current weather for a city.", InputSchema: city}})
	cat.SetVendorTools("maps", []registry.ToolDef{{Name: "route", Description: "Driving route between two places.", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	cat.SetVendorTools("img", []registry.ToolDef{{Name: "draw", Description: "Draw an image from a prompt.", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	cat.SetVendorTools("secret", []registry.ToolDef{{Name: "weather", Description: "Weather for insiders.", InputSchema: city}})
	cat.SetCapabilities([]registry.Capability{{Name: "weather.current", Description: "Current weather, governed.", InputSchema: city,
		Chain: []registry.ChainStep{{Tool: "wx/current_weather"}}}})
	ups := upstreams{"wx": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("sunny")}}, nil
	}}
	gw := hub.NewGateway(cat, ups, &hub.Options{Visible: func(tenant string, e registry.Entry) bool {
		return tenant != DefaultTenant || !strings.HasPrefix(e.Name, "secret__")
	}})
	p := &orchestrator.Planner{Gateway: gw, Catalog: cat}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	s := NewServer(gw, &Options{ToolSearch: &ToolSearchOptions{MCPTool: mcpTool, Always: []string{"maps__*"},
		Search: func(tenant, query string, k int) []SearchHit {
			var out []SearchHit
			for _, h := range p.Search(tenant, query, k) {
				out = append(out, SearchHit{Entry: h.Entry, Score: h.Score, Matched: h.Matched})
			}
			return out
		}}})
	t.Cleanup(func() { s.Close() })
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

func TestToolSearchREST(t *testing.T) {
	ts := searchServer(t, false)
	var out struct {
		Tools []SearchResult `json:"tools"`
	}
	if code := getJSON(t, ts.URL+"/v1/tools?query=current+weather+in+Paris&top_k=2", &out); code != 200 {
		t.Fatalf("status %d", code)
	}
	if len(out.Tools) != 2 || out.Tools[0].Name != "weather_current" || out.Tools[0].Kind != "capability" ||
		out.Tools[1].Name != "wx__current_weather" || out.Tools[0].Score <= 0 || strings.Join(out.Tools[0].Matched, " ") != "current weather" ||
		len(out.Tools[1].InputSchema) == 0 {
		t.Errorf("hits %+v; want the capability first, then its vendor tool, with scores and the matched words", out.Tools)
	}
	var all struct {
		Tools []SearchResult `json:"tools"`
	}
	getJSON(t, ts.URL+"/v1/tools?query=weather&top_k=50", &all)
	for _, h := range all.Tools {
		if strings.HasPrefix(h.Name, "secret__") {
			t.Errorf("the tenant finds %s, which it may not see", h.Name)
		}
	}
	var oa struct {
		Tools []registry.FunctionTool `json:"tools"`
	}
	getJSON(t, ts.URL+"/v1/tools?query=draw+an+image&top_k=1&format=openai", &oa)
	if len(oa.Tools) != 1 || oa.Tools[0].Function.Name != "img__draw" {
		t.Errorf("format=openai: %+v", oa.Tools)
	}
	for _, tt := range []struct{ query, says string }{
		{"query=", "query is empty"},
		{"query=x&top_k=0", "top_k 0: want 1 to 50"},
		{"query=x&top_k=many", `top_k "many"`},
		{"query=x&top_k=51", "want 1 to 50"},
		{"query=" + strings.Repeat("a", MaxQueryLength+1), "over the limit"},
		{"query=x&format=xml", "format must be"},
	} {
		var e struct {
			Error ErrorBody `json:"error"`
		}
		if code := getJSON(t, ts.URL+"/v1/tools?"+tt.query, &e); code != 400 || !strings.Contains(e.Error.Message, tt.says) {
			t.Errorf("%.40s: %d %+v; want 400 saying %q", tt.query, code, e.Error, tt.says)
		}
	}
}

// With search_tools on, tools/list on /mcp lists it and the always tools
// (on the fast path and through mcp-go alike); the rest stay callable.
func TestSearchToolMCP(t *testing.T) {
	ts := searchServer(t, true)
	c, err := client.NewStreamableHttpClient(ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION}}); err != nil {
		t.Fatal(err)
	}
	lt, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "maps__route,search_tools" {
		t.Errorf("tools/list: %v", names)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: SearchToolName, Arguments: map[string]any{"query": "天气 weather", "top_k": 5}}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %+v", err, res)
	}
	text := res.Content[0].(mcp.TextContent).Text
	var sr struct {
		Tools []SearchResult `json:"tools"`
	}
	if err := json.Unmarshal([]byte(text), &sr); err != nil || len(sr.Tools) < 2 || sr.Tools[0].Name != "weather_current" || strings.Contains(text, "secret__") {
		t.Errorf("search_tools: %s %v", text, err)
	}
	got, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "wx__current_weather", Arguments: map[string]any{"city": "Oslo"}}})
	if err != nil || got.IsError {
		t.Errorf("calling an unlisted tool: %v %+v", err, got)
	}
	bad, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: SearchToolName, Arguments: map[string]any{"query": "x", "top_k": 1.5}}})
	if err != nil || !bad.IsError {
		t.Errorf("top_k 1.5: %v %+v", err, bad)
	}
}

func getJSON(t *testing.T, url string, into any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("%s: %d, body not JSON: %v", url, resp.StatusCode, err)
	}
	return resp.StatusCode
}
