package interop

import (
	"encoding/json"
	"slices"
	"testing"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhub/toolhub/test/harness"
)

// searchResult is search_tools' answer.
type searchResult struct {
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Score       float64         `json:"score"`
		Matched     []string        `json:"matched"`
	} `json:"tools"`
}

// startSearchHub serves the everything server with the catalog deferred
// behind search_tools and everything__get-sum listed always.
func startSearchHub(t *testing.T, peerDir string) *harness.InProcess {
	t.Helper()
	return startHub(t, peerDir, `catalog: {search_tool: true, always: ["everything__get-sum"]}`)
}

// TestSearchToolWithTheTypeScriptClient: with catalog.search_tool on, the
// official TypeScript SDK client lists search_tools and the always tool
// only, finds the echo tool (with its schema) by searching, and calls it
// though it is not listed.
func TestSearchToolWithTheTypeScriptClient(t *testing.T) {
	dir := peers(t)
	h := startSearchHub(t, dir)
	events := runTSClient(t, dir, h.URL+"/mcp", []callSpec{
		{Name: "search_tools", Arguments: map[string]any{"query": "echo back a message", "top_k": 3}},
		{Name: "everything__echo", Arguments: map[string]any{"message": "found by search"}},
		{Name: "search_tools", Arguments: map[string]any{"query": "  "}},
	}, nil)
	var listed []string
	for _, e := range events {
		if e.Event == "tools" {
			listed = e.Names
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, []string{"everything__get-sum", "search_tools"}) {
		t.Errorf("tools/list: %v; want search_tools and the always tool", listed)
	}
	r, rerr := callResult(t, events, "search_tools")
	if rerr != nil || r.IsError || len(r.Content) != 1 {
		t.Fatalf("search_tools: %+v %+v", r, rerr)
	}
	var sr searchResult
	if err := json.Unmarshal([]byte(r.Content[0].Text), &sr); err != nil {
		t.Fatal(err)
	}
	if len(sr.Tools) == 0 || sr.Tools[0].Name != "everything__echo" || len(sr.Tools[0].InputSchema) == 0 || !slices.Contains(sr.Tools[0].Matched, "echo") {
		t.Errorf("search_tools found %+v; want everything__echo first, with its schema", sr.Tools)
	}
	if len(sr.Tools) > 3 {
		t.Errorf("top_k 3 gave %d tools", len(sr.Tools))
	}
	echoed := false
	for _, e := range events {
		if e.Event == "call" && e.Name == "everything__echo" && e.Error == nil {
			var res toolResult
			_ = json.Unmarshal(e.Result, &res)
			echoed = !res.IsError && len(res.Content) > 0 && res.Content[0].Text == "Echo: found by search"
		}
	}
	if !echoed {
		t.Errorf("calling the unlisted everything__echo: %+v", events)
	}
	var empty *event
	for i, e := range events {
		if e.Event == "call" && e.Name == "search_tools" {
			empty = &events[i] // the last one: the empty query
		}
	}
	if empty == nil || !json.Valid(empty.Result) || !isErrorResult(empty.Result) {
		t.Errorf("an empty query is not a tool error: %+v", empty)
	}
}

func isErrorResult(raw json.RawMessage) bool {
	var r toolResult
	return json.Unmarshal(raw, &r) == nil && r.IsError
}

// TestSearchToolWithGoSDK: the same with the official Go SDK's client.
func TestSearchToolWithGoSDK(t *testing.T) {
	h := startSearchHub(t, peers(t))
	ctx := t.Context()
	c := gomcp.NewClient(&gomcp.Implementation{Name: "go-sdk-search", Version: "1.0.0"}, nil)
	s, err := c.Connect(ctx, &gomcp.StreamableClientTransport{Endpoint: h.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lt, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"everything__get-sum", "search_tools"}) {
		t.Errorf("tools/list: %v", names)
	}
	res, err := s.CallTool(ctx, &gomcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "add two numbers"}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var sr searchResult
	if err := json.Unmarshal(b, &sr); err != nil || len(sr.Tools) == 0 || sr.Tools[0].Name != "everything__get-sum" {
		t.Errorf("search for adding numbers: %s %v", b, err)
	}
	got, err := s.CallTool(ctx, &gomcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || got.IsError {
		t.Errorf("calling an unlisted tool: %v %+v", err, got)
	}
}
