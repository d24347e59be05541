package app

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/internal/vendorlife"
	"github.com/toolhub/toolhub/registry"
)

// httpTimeouts turns the config's http section into the front door's
// timeouts (zero: the API's defaults).
func httpTimeouts(h config.HTTP) api.Timeouts {
	return api.Timeouts{ReadHeader: h.ReadHeaderTimeout.D(), Read: h.ReadTimeout.D(), Write: h.WriteTimeout.D(), Idle: h.IdleTimeout.D()}
}

// reauthenticate checks a long-lived request's key again (nil with
// authentication off: nothing to revoke).
func (a *App) reauthenticate(cfg *config.Config) func(r *http.Request) error {
	if !cfg.Auth.Enabled {
		return nil
	}
	return func(r *http.Request) error {
		_, err := a.authenticate(r)
		return err
	}
}

// capabilitiesHandler serves GET /v1/capabilities (and the dashboard's
// capabilities panel) with only the capabilities the caller may see: a
// tenant key those its tenant's tools patterns allow, a vendor key those
// whose chain has its vendor, operators and finance every one.
func (a *App) capabilitiesHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := api.PrincipalFrom(r.Context())
		var out []fallback.Status
		for _, st := range a.Modes.Status() {
			if a.capabilityVisible(p, st.Capability) {
				out = append(out, st)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"capabilities": out})
	})
}

func (a *App) capabilityVisible(p auth.Principal, name string) bool {
	if p.Is(auth.RoleOperator, auth.RoleFinance) {
		return true
	}
	var c *registry.Capability
	for _, x := range a.Catalog.Capabilities() {
		if x.Name == name {
			c = x
		}
	}
	switch {
	case p.Role == auth.RoleVendor:
		return c != nil && slices.ContainsFunc(c.Chain, func(s registry.ChainStep) bool { v, _ := s.VendorTool(); return v == p.Vendor })
	case p.Role == auth.RoleTenant && c != nil:
		return a.visible(p.Tenant, registry.Entry{Name: c.CatalogName(), Capability: c})
	case p.Role == auth.RoleTenant:
		// Known to the degradation modes only (no chain in the catalog).
		return a.visible(p.Tenant, registry.Entry{Name: registry.CapabilityCatalogName(name), Capability: &registry.Capability{Name: name}})
	}
	return false
}

// reportAudience is whose eyes a usage report is for: a tenant sees what
// it is charged, a vendor what it is paid; neither sees the other's
// prices nor toolhub's margin.
func reportAudience(r *http.Request) billing.Audience {
	switch api.PrincipalFrom(r.Context()).Role {
	case auth.RoleTenant:
		return billing.AudienceTenant
	case auth.RoleVendor:
		return billing.AudienceVendor
	}
	return billing.AudienceAll
}

// stdioRefused refuses a stdio vendor that comes from the admin API (or
// from the registry the API writes to) unless the config allows it
// ([vendorlife.StdioRefused]).
func stdioRefused(cfg *config.Config, spec registry.Vendor) error {
	return vendorlife.StdioRefused(cfg.Admin.AllowStdioVendors, spec)
}
