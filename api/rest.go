package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// ToolInfo is one catalog entry in GET /v1/tools.
type ToolInfo struct {
	Name         string          `json:"name"`
	Kind         string          `json:"kind"` // "tool" or "capability"
	Vendor       string          `json:"vendor,omitempty"`
	VendorTool   string          `json:"vendor_tool,omitempty"` // the tool's own name at its vendor
	Capability   string          `json:"capability,omitempty"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Chain        []string        `json:"chain,omitempty"`
}

func (s *Server) visibleEntries(tenant string) []registry.Entry {
	return s.cat.Entries(func(e registry.Entry) bool { return s.gw.Visible(tenant, e) })
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("query") {
		s.searchTools(w, r) // toolsearch.go
		return
	}
	entries := s.visibleEntries(TenantFrom(r.Context()))
	switch r.URL.Query().Get("format") {
	case "openai":
		writeJSON(w, http.StatusOK, map[string]any{"tools": registry.FunctionSpecs(entries)})
		return
	case "", "toolhub":
	default:
		writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: "format must be toolhub (default) or openai"}, "")
		return
	}
	out := make([]ToolInfo, 0, len(entries))
	for _, e := range entries {
		out = append(out, toolInfo(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out, "catalog_version": s.cat.Version()})
}

// CallRequest is the body of POST /v1/tools/{name}/call.
type CallRequest struct {
	Arguments Arguments      `json:"arguments"` // an object, or a string holding one (function.arguments)
	Meta      map[string]any `json:"_meta,omitempty"`
	Priority  string         `json:"priority,omitempty"` // interactive (default) or batch
	// DataLevel declares the privacy level of the data in the arguments
	// (0 public … 3 biometrics/passwords); absent: the tenant's default.
	DataLevel *int `json:"data_level,omitempty"`
	// Timeout is the call's overall deadline ("5s", "1m"): every retry
	// and fallback fits inside it. Absent: the hub's default for the tool
	// (governance.deadlines).
	Timeout string `json:"timeout,omitempty"`
}

// CallResponse is a successful answer of POST /v1/tools/{name}/call.
type CallResponse struct {
	Content           any  `json:"content"`
	StructuredContent any  `json:"structuredContent,omitempty"`
	IsError           bool `json:"isError,omitempty"`
	// Final, with isError: the vendor's definitive answer to these
	// arguments (no retry or other vendor would change it).
	Final      bool           `json:"final,omitempty"`
	Provenance hub.Provenance `json:"provenance"`
	// Findings: the vendor's result scan flagged this text (the result is
	// not changed); absent when there are none.
	Findings []hub.Finding `json:"findings,omitempty"`
}

func (s *Server) callTool(w http.ResponseWriter, r *http.Request) {
	body, err := readLimited(r.Body, s.opts.MaxBodyBytes)
	if err != nil {
		writeError(w, r, err, "")
		return
	}
	var req CallRequest
	if len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: "body must be {\"arguments\": {...}} (or arguments as a JSON string holding an object): " + err.Error()}, "")
			return
		}
	}
	c := &hub.Call{Tenant: TenantFrom(r.Context()), Name: r.PathValue("name"), Arguments: req.Arguments, Meta: hub.ClientMeta(req.Meta)}
	if c.DataLevel, err = s.dataLevel(c.Tenant, req.DataLevel); err != nil {
		writeError(w, r, err, "")
		return
	}
	switch req.Priority {
	case "", "interactive":
	case "batch":
		c.Priority = hub.Batch
	default:
		writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: "priority must be interactive or batch"}, "")
		return
	}
	ctx := r.Context()
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		if err != nil || d <= 0 {
			writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf("timeout %q: want a positive duration like \"5s\"", req.Timeout)}, "")
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	res, err := s.gw.Call(ctx, c)
	if err != nil {
		writeError(w, r, err, c.ID)
		return
	}
	content := any(res.Content)
	if res.Content == nil {
		content = []any{}
	}
	writeJSON(w, http.StatusOK, CallResponse{Content: content, StructuredContent: res.Structured, IsError: res.IsError, Final: res.IsError && res.Final, Provenance: res.Provenance, Findings: res.Findings})
}

func (s *Server) listVendors(w http.ResponseWriter, r *http.Request) {
	var v any = []any{}
	if s.opts.Vendors != nil {
		v = s.opts.Vendors(r.Context())
	}
	writeJSON(w, http.StatusOK, map[string]any{"vendors": v})
}

// MetaDataLevel is the _meta key an MCP client declares its call's privacy
// level with.
const MetaDataLevel = "toolhub/data_level"

// dataLevel is the privacy level of a call: as declared, or the tenant's.
func (s *Server) dataLevel(tenant string, declared *int) (int, error) {
	if declared != nil {
		if *declared < 0 || *declared > registry.MaxDataLevel {
			return 0, &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf("data_level %d: want 0 (public) to 3 (biometrics, passwords)", *declared)}
		}
		return *declared, nil
	}
	if s.opts.DataLevel != nil {
		return s.opts.DataLevel(tenant), nil
	}
	return 0, nil
}
