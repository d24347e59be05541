package api

import (
	"net/http"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/servers"
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

// vendorSurface is one vendor's resources and prompts.
type vendorSurface struct {
	vendor string
	servers.Surface
}

// surfaces are the surfaces of the vendors whose resources and prompts
// the request's tenant may see (?vendor=ID for one), sorted by vendor.
func (s *Server) surfaces(r *http.Request) []vendorSurface {
	if s.opts.Relay == nil {
		return nil
	}
	tenant, want := TenantFrom(r.Context()), r.URL.Query().Get("vendor")
	var out []vendorSurface
	for _, v := range s.cat.Vendors() {
		if want != "" && v != want || !s.gw.VendorVisible(tenant, v) {
			continue
		}
		if sf, ok := s.opts.Relay.Surface(v); ok {
			out = append(out, vendorSurface{v, sf})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].vendor < out[j].vendor })
	return out
}

// listResources serves GET /v1/resources: the resources and templates of
// the vendors the tenant can see (?vendor=ID for one).
func (s *Server) listResources(w http.ResponseWriter, r *http.Request) {
	out := []ResourceInfo{}
	for _, sf := range s.surfaces(r) {
		v := sf.vendor
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
	for _, sf := range s.surfaces(r) {
		v := sf.vendor
		for _, p := range sf.Prompts {
			out = append(out, PromptInfo{Vendor: v, Name: p.Name, ScopedName: ScopedPrompt(v, p.Name), Title: p.Title,
				Description: p.Description, Arguments: p.Arguments})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompts": out})
}
