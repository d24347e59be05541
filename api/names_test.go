package api

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestCapabilityNamesEverywhere: a capability answers to its dotted name
// (weather.current) and its function-calling name (weather_current) over
// REST and MCP alike; MCP lists it once, by its function-calling name.
func TestCapabilityNamesEverywhere(t *testing.T) {
	s, _ := newTestServer(t)
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
	for _, name := range []string{"weather.current", "weather_current"} {
		var ok CallResponse
		if st := post(t, ts.URL+"/v1/tools/"+name+"/call", `{"arguments":{"city":"Oslo"}}`, &ok); st != 200 {
			t.Errorf("REST %s: %d", name, st)
		}
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: map[string]any{"city": "Oslo"}}})
		if err != nil || res.IsError || !strings.Contains(toJSON(res.Content), "sunny in Oslo") {
			t.Errorf("MCP tools/call %s: %v %+v", name, err, res)
		}
	}
	lr, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tl := range lr.Tools {
		if strings.HasPrefix(tl.Name, "weather.") || strings.HasPrefix(tl.Name, "weather_") {
			n++
			if tl.Name != "weather_current" || tl.Title != "weather.current" {
				t.Errorf("capability listed as %q (title %q)", tl.Name, tl.Title)
			}
		}
	}
	if n != 1 {
		t.Errorf("the capability is listed %d times", n)
	}
}
