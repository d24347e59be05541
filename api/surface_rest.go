package api

import (
	"net/http"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"
)

// ResourceInfo is one vendor resource or resource template in GET
// /v1/resources. URI is the vendor's own; ScopedURI is how /mcp names it.
type ResourceInfo struct {
	Vendor      string `json:"vendor"`
	Kind        string `json:"kind"` // "resource" or "template"
	URI         string `json:"uri"`
	ScopedURI   string `json:"scoped_uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

// PromptInfo is one vendor prompt in GET /v1/prompts. Name is the
// vendor's own; ScopedName is how /mcp names it.
type PromptInfo struct {
	Vendor      string               `json:"vendor"`
	Name        string               `json:"name"`
	ScopedName  string               `json:"scoped_name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	Arguments   []mcp.PromptArgument `json:"arguments,omitempty"`
}

// surfaceVendors are the vendors whose resources and prompts the request's
// tenant may see, sorted.
func (s *Server) surfaceVendors(r *http.Request) []string {
	tenant := TenantFrom(r.Context())
	var out []string
	for _, v := range s.cat.Vendors() {
		if s.gw.VendorVisible(tenant, v) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// listResources serves GET /v1/resources: the resources and templates of
// the vendors the tenant can see (?vendor=ID for one).
func (s *Server) listResources(w http.ResponseWriter, r *http.Request) {
	out := []ResourceInfo{}
	want := r.URL.Query().Get("vendor")
	for _, v := range s.surfaceVendors(r) {
		if want != "" && v != want || s.opts.Relay == nil {
			continue
		}
		sf, ok := s.opts.Relay.Surface(v)
		if !ok {
			continue
		}
		for _, res := range sf.Resources {
			out = append(out, ResourceInfo{Vendor: v, Kind: "resource", URI: res.URI, ScopedURI: ScopedURI(v, res.URI),
				Name: res.Name, Title: res.Title, Description: res.Description, MIMEType: res.MIMEType})
		}
		for _, t := range sf.Templates {
			if t.URITemplate == nil {
				continue
			}
			u := t.URITemplate.Raw()
			out = append(out, ResourceInfo{Vendor: v, Kind: "template", URI: u, ScopedURI: ScopedURI(v, u),
				Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"resources": out})
}

// listPrompts serves GET /v1/prompts: the prompts of the vendors the
// tenant can see (?vendor=ID for one).
func (s *Server) listPrompts(w http.ResponseWriter, r *http.Request) {
	out := []PromptInfo{}
	want := r.URL.Query().Get("vendor")
	for _, v := range s.surfaceVendors(r) {
		if want != "" && v != want || s.opts.Relay == nil {
			continue
		}
		sf, ok := s.opts.Relay.Surface(v)
		if !ok {
			continue
		}
		for _, p := range sf.Prompts {
			out = append(out, PromptInfo{Vendor: v, Name: p.Name, ScopedName: ScopedPrompt(v, p.Name), Title: p.Title,
				Description: p.Description, Arguments: p.Arguments})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompts": out})
}
