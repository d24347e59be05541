package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// SearchToolName is the MCP tool that searches the catalog when it is
// deferred behind it ([ToolSearchOptions].MCPTool).
const SearchToolName = "search_tools"

// Tool search bounds.
const (
	DefaultTopK    = 10
	MaxTopK        = 50
	MaxQueryLength = 1000 // bytes
)

// SearchHit is one catalog entry found for a query.
type SearchHit struct {
	Entry   registry.Entry
	Score   float64
	Matched []string // the query's words that matched, as typed
}

// ToolSearchOptions configure tool search: GET /v1/tools?query= and the
// search_tools MCP tool.
type ToolSearchOptions struct {
	// Search returns up to k entries tenant may see that best answer
	// query, best first (the offline planner's ranking:
	// orchestrator.Planner.Search). Required.
	Search func(tenant, query string, k int) []SearchHit
	// MCPTool adds search_tools to /mcp and defers the catalog behind it:
	// tools/list lists search_tools and the Always tools only; every tool
	// stays callable by name.
	MCPTool bool
	// Always are the catalog names (path.Match patterns: "weather_*")
	// that tools/list on /mcp lists besides search_tools.
	Always []string
}

// SearchResult is one hit as REST and search_tools answer it.
type SearchResult struct {
	ToolInfo
	Score   float64  `json:"score"`
	Matched []string `json:"matched"`
}

func toolInfo(e registry.Entry) ToolInfo {
	if c := e.Capability; c != nil {
		info := ToolInfo{Name: e.Name, Kind: "capability", Capability: c.Name, Title: c.Name, Description: c.Description, InputSchema: c.InputSchema, OutputSchema: c.OutputSchema}
		for _, st := range c.Chain {
			info.Chain = append(info.Chain, st.Tool)
		}
		return info
	}
	d := e.Tool.Def
	return ToolInfo{Name: e.Name, Kind: "tool", Vendor: e.Tool.Vendor, VendorTool: d.Name, Title: d.Title, Description: d.Description,
		InputSchema: d.InputSchema, OutputSchema: d.OutputSchema, Annotations: d.Annotations}
}

// search runs a query for tenant: the hits, or a typed error for a bad
// query or top_k.
func (s *Server) search(tenant, query string, topK int) ([]SearchResult, error) {
	o := s.opts.ToolSearch
	switch {
	case o == nil || o.Search == nil:
		return nil, &hub.Error{Code: hub.CodeInvalidRequest, Message: "tool search is not configured on this hub"}
	case strings.TrimSpace(query) == "":
		return nil, &hub.Error{Code: hub.CodeInvalidRequest, Message: "query is empty: say what the tools should do, e.g. query=weather in Paris"}
	case len(query) > MaxQueryLength:
		return nil, &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf("query is %d bytes, over the limit of %d", len(query), MaxQueryLength)}
	case topK < 1 || topK > MaxTopK:
		return nil, &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf("top_k %d: want 1 to %d", topK, MaxTopK)}
	}
	hits := o.Search(tenant, query, topK)
	out := make([]SearchResult, 0, len(hits))
	for _, h := range hits {
		m := h.Matched
		if m == nil {
			m = []string{}
		}
		out = append(out, SearchResult{ToolInfo: toolInfo(h.Entry), Score: float64(int64(h.Score*1000+0.5)) / 1000, Matched: m})
	}
	return out, nil
}

// searchTools answers GET /v1/tools?query=…&top_k=…[&format=openai].
func (s *Server) searchTools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	topK := DefaultTopK
	if v := q.Get("top_k"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf("top_k %q: want a number from 1 to %d", v, MaxTopK)}, "")
			return
		}
		topK = n
	}
	format := q.Get("format")
	if format != "" && format != "toolhub" && format != "openai" {
		writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: "format must be toolhub (default) or openai"}, "")
		return
	}
	hits, err := s.search(TenantFrom(r.Context()), q.Get("query"), topK)
	if err != nil {
		writeError(w, r, err, "")
		return
	}
	if format == "openai" {
		// In rank order (FunctionSpecs would put capabilities first).
		specs := make([]registry.FunctionTool, 0, len(hits))
		for _, h := range hits {
			e, _ := s.cat.Lookup(h.Name)
			specs = append(specs, registry.FunctionSpec(e))
		}
		writeJSON(w, http.StatusOK, map[string]any{"tools": specs})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": hits, "query": q.Get("query"), "catalog_version": s.cat.Version()})
}

// searchEnabled reports whether /mcp defers the catalog behind
// search_tools.
func (f *mcpFront) searchEnabled() bool {
	o := f.s.opts.ToolSearch
	return o != nil && o.MCPTool && o.Search != nil
}

// isSearchTool reports whether name, on vendor's server, is search_tools.
func (f *mcpFront) isSearchTool(vendor, name string) bool {
	return vendor == "" && name == SearchToolName && f.searchEnabled()
}

// deferred reports whether tools/list on /mcp leaves name out: the
// catalog is behind search_tools, but for the Always tools.
func (f *mcpFront) deferred(vendor, name string) bool {
	if vendor != "" || !f.searchEnabled() || name == SearchToolName {
		return false
	}
	for _, p := range f.s.opts.ToolSearch.Always {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	return true
}

// searchServerTools is search_tools for the whole catalog's servers (none
// when search is off).
func (f *mcpFront) searchServerTools(vendor string) []server.ServerTool {
	if vendor != "" || !f.searchEnabled() {
		return nil
	}
	t := mcp.NewToolWithRawSchema(SearchToolName,
		"Find the tools for a task in toolhub's catalog (most tools are not listed: search first). "+
			"Give the task in plain words, in any language; the result names the best tools, with their input schemas, best first. Then call them by name.",
		json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"query":{"type":"string","description":"What the tools should do, e.g. \"weather in Paris tomorrow\""},`+
			`"top_k":{"type":"integer","minimum":1,"maximum":%d,"description":"How many tools to return (default %d)"}},"required":["query"],"additionalProperties":false}`, MaxTopK, DefaultTopK)))
	t.Title = "Search tools"
	ro, closed := true, false
	t.Annotations = mcp.ToolAnnotation{ReadOnlyHint: &ro, OpenWorldHint: &closed}
	return []server.ServerTool{{Tool: t, Handler: f.searchHandler}}
}

func (f *mcpFront) searchHandler(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	query, _ := args["query"].(string)
	topK := DefaultTopK
	if v, ok := args["top_k"]; ok {
		n, isNum := v.(float64)
		if !isNum || n != float64(int(n)) {
			return errorResult(&hub.Error{Code: hub.CodeInvalidArguments, Message: fmt.Sprintf("top_k must be an integer from 1 to %d", MaxTopK)}, ""), nil
		}
		topK = int(n)
	}
	hits, err := f.s.search(TenantFrom(ctx), query, topK)
	if err != nil {
		if e := hub.AsError(err); e != nil && e.Code == hub.CodeInvalidRequest {
			err = &hub.Error{Code: hub.CodeInvalidArguments, Message: e.Message}
		}
		return errorResult(err, ""), nil
	}
	body := map[string]any{"tools": hits}
	b, _ := json.Marshal(body)
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(b))}, StructuredContent: body}, nil
}
