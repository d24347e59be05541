package app

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/mcpregistry"
)

// registryOptions serve the MCP Registry API (api/registryapi.go):
// vendors' entries from their specs in force, publishing through the
// same lifecycle as POST /v1/vendors.
func (a *App) registryOptions(authOn bool) *api.RegistryOptions {
	return &api.RegistryOptions{
		AuthHeader: authOn,
		Vendor:     a.registryVendor,
		Publish:    a.RegisterVendor,
		AllowStdio: func() bool { return a.cfg.Load().Admin.AllowStdioVendors },
	}
}

func (a *App) registryVendor(_ context.Context, id string) (api.RegistryVendor, bool) {
	spec, ok := a.spec(id)
	if !ok {
		return api.RegistryVendor{}, false
	}
	rv := api.RegistryVendor{Spec: spec}
	// The version the vendor's MCP server reports ("name version").
	if srv := a.Manager.Status(id).Server; srv != "" {
		if i := strings.LastIndexByte(srv, ' '); i >= 0 && i < len(srv)-1 {
			rv.Version = srv[i+1:]
		}
	}
	if l, err := mcpregistry.ParseListing(spec.Listing); err == nil && len(spec.Listing) > 0 {
		rv.Version = l.Version
	}
	rv.PublishedAt, rv.UpdatedAt = a.regTimes.of(spec)
	return rv, true
}

// specTimes remembers when each vendor's spec was first and last seen in
// force by this process: an entry's publishedAt and updatedAt.
type specTimes struct {
	mu sync.Mutex
	m  map[string]specTime
}

type specTime struct {
	spec               string // the spec as JSON
	published, updated time.Time
}

func (t *specTimes) of(v registry.Vendor) (published, updated time.Time) {
	b, _ := json.Marshal(v)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]specTime{}
	}
	st, ok := t.m[v.ID]
	now := time.Now().UTC().Truncate(time.Millisecond)
	switch {
	case !ok:
		st = specTime{spec: string(b), published: now, updated: now}
	case st.spec != string(b):
		st.spec, st.updated = string(b), now
	}
	t.m[v.ID] = st
	return st.published, st.updated
}

// toolSearch serves tool search (api/toolsearch.go) with the offline
// planner's ranking.
func (a *App) toolSearch(cfg *config.Config) *api.ToolSearchOptions {
	return &api.ToolSearchOptions{
		MCPTool: cfg.Catalog.SearchTool,
		Always:  cfg.Catalog.Always,
		Search: func(tenant, query string, k int) []api.SearchHit {
			hits := a.Planner.Search(tenant, query, k)
			out := make([]api.SearchHit, len(hits))
			for i, h := range hits {
				out[i] = api.SearchHit{Entry: h.Entry, Score: h.Score, Matched: h.Matched}
			}
			return out
		},
	}
}
