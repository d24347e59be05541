package app

import (
	"slices"
	"strings"

	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/poison"
)

// startPins puts the tool pins (registry.Pinner, kept in the registry
// store) in front of the catalog: what a vendor lists is served only as
// it was pinned — approved by an operator, registered, or first seen —
// and any difference waits under GET /v1/admin/vendors/pending.
func (a *App) startPins() {
	scan := a.opts.ScanTools
	if scan == nil {
		scan = a.scanTool
	}
	a.pins = registry.NewPinner(&registry.PinnerOptions{
		Store:  a.Store,
		Policy: a.vendorPinPolicy,
		Scan:   scan,
		Logger: a.log,
	})
	a.Catalog.SetGate(a.pins.Gate)
}

// vendorPinPolicy is vendor's pin policy in force; a vendor not applied
// (yet) is strict.
func (a *App) vendorPinPolicy(vendor string) string {
	if m := a.pinPolicy.Load(); m != nil {
		if p, ok := (*m)[vendor]; ok {
			return p
		}
	}
	return registry.PinStrict
}

// DefaultConfigPin is the pin policy of a vendor declared in the config
// file that says none: off. Its operator wrote the spec and reloads it at
// will; and a config vendor's tools changing live (list_changed) are
// served at once, as they were before pinning. pin: strict in the spec
// pins such a vendor's tools on first sight. A vendor registered through
// the API is strict unless an operator says otherwise.
const DefaultConfigPin = registry.PinOff

// pinPolicies resolves the pin policy of every vendor in force.
func pinPolicies(cfg *config.Config, vendors []registry.Vendor) *map[string]string {
	m := make(map[string]string, len(vendors))
	for _, v := range vendors {
		switch {
		case v.Pin != "":
			m[v.ID] = v.Pin
		case slices.ContainsFunc(cfg.Vendors, func(c registry.Vendor) bool { return c.ID == v.ID }):
			m[v.ID] = DefaultConfigPin
		default:
			m[v.ID] = registry.PinStrict
		}
	}
	return &m
}

// scanTool is the catalog's poisoning scan (config catalog_scan): the
// findings of registry/poison on a tool about to be served, less those
// the config allows. A finding holds the tool for an operator.
func (a *App) scanTool(t registry.ToolText) []registry.Finding {
	cfg := a.cfg.Load()
	if cfg != nil && cfg.CatalogScan.Disabled {
		return nil
	}
	found := poison.ScanTool(t.Def)
	if cfg != nil && len(cfg.CatalogScan.Allow) > 0 {
		var allow []poison.Allow
		for _, al := range cfg.CatalogScan.Allow {
			switch vendor, tool, _ := strings.Cut(al.Tool, "__"); {
			case al.Tool == "":
				allow = append(allow, al)
			case vendor == t.Vendor && tool == t.Def.Name:
				al.Tool = t.Def.Name
				allow = append(allow, al)
			}
		}
		found = poison.Filter(found, allow)
	}
	out := make([]registry.Finding, 0, len(found))
	for _, f := range found {
		out = append(out, registry.Finding{Rule: f.Rule, Field: f.Field, Span: f.Span})
	}
	return out
}
