package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/servers"
)

var _ api.Admin = (*App)(nil)

// pendingChange is a vendor update that waits for an operator because
// callers would notice it.
type pendingChange struct {
	spec   registry.Vendor
	change api.VendorChange
	by     auth.Principal
}

func forbidden(format string, args ...any) error {
	return &hub.Error{Code: hub.CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// mayChange checks that the caller may change vendor id.
func (a *App) mayChange(ctx context.Context, id string) (auth.Principal, error) {
	p := api.PrincipalFrom(ctx)
	if p.Role == auth.RoleVendor && p.Vendor != id {
		return p, forbidden("a vendor key changes only its own vendor (%q), not %q", p.Vendor, id)
	}
	if !p.Is(auth.RoleVendor, auth.RoleOperator) {
		return p, forbidden("vendor changes need a vendor or operator key")
	}
	for _, v := range a.cfg.Load().Vendors {
		if v.ID == id {
			return p, forbidden("vendor %q is declared in the config file; change it there and reload", id)
		}
	}
	return p, nil
}

// RegisterVendor validates a vendor spec — names, outbound safety, a
// connection and its tools' schemas — before it goes live. An update that
// callers would notice (a tool removed, an argument now required, …) waits
// for an operator unless an operator made it.
func (a *App) RegisterVendor(ctx context.Context, spec registry.Vendor, create bool) (api.VendorChange, error) {
	p, err := a.mayChange(ctx, spec.ID)
	if err != nil {
		return api.VendorChange{}, err
	}
	if err := spec.Validate(); err != nil {
		return api.VendorChange{}, badRequest("%v", err)
	}
	if spec.MCP != nil && spec.MCP.Transport == registry.TransportStdio && !p.Is(auth.RoleOperator) {
		return api.VendorChange{}, forbidden("only an operator registers a stdio vendor: it runs a command on the hub")
	}
	old, err := a.Store.GetVendor(ctx, spec.ID)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, registry.ErrNotFound):
		return api.VendorChange{}, err
	case create && exists:
		return api.VendorChange{}, badRequest("vendor %q exists; update it with PUT", spec.ID)
	case !create && !exists:
		return api.VendorChange{}, badRequest("vendor %q does not exist; register it with POST", spec.ID)
	}
	if u := vendorURL(spec); u != "" {
		if err := a.Guard.CheckURL(ctx, u); err != nil {
			return api.VendorChange{}, forbidden("vendor %q: %v", spec.ID, err)
		}
	}
	defs, rejected, err := a.tryVendor(ctx, spec)
	if err != nil {
		return api.VendorChange{}, &hub.Error{Code: hub.CodeUnavailable, Vendor: spec.ID, Message: fmt.Sprintf("vendor %q did not pass its reachability probe: %v", spec.ID, err)}
	}
	change := api.VendorChange{Vendor: spec.ID, Status: "live", Rejected: rejected}
	for _, d := range defs {
		change.Tools = append(change.Tools, d.Name)
	}
	if exists {
		var live []registry.ToolDef
		for _, t := range a.Catalog.VendorTools(spec.ID) {
			live = append(live, t.Def)
		}
		change.Breaking = registry.BreakingChanges(live, defs)
	}
	if len(change.Breaking) > 0 && !p.Is(auth.RoleOperator) {
		change.Status = "pending_approval"
		a.pendingMu.Lock()
		a.pending[spec.ID] = pendingChange{spec: spec, change: change, by: p}
		a.pendingMu.Unlock()
		a.audit(ctx, "vendor.pending", spec.ID, old.Vendor, spec)
		return change, nil
	}
	return a.commitVendor(ctx, spec, change, exists, old)
}

func (a *App) commitVendor(ctx context.Context, spec registry.Vendor, change api.VendorChange, exists bool, old registry.VendorRecord) (api.VendorChange, error) {
	rec, err := a.Store.PutVendor(ctx, spec, -1, api.PrincipalFrom(ctx).KeyID)
	if err != nil {
		return api.VendorChange{}, err
	}
	change.Version = rec.Version
	action, before := "vendor.register", any(nil)
	if exists {
		action, before = "vendor.update", old.Vendor
	}
	a.audit(ctx, action, spec.ID, before, spec)
	return change, a.applyStored(ctx)
}

// applyStored re-applies the config with the stored vendors.
func (a *App) applyStored(ctx context.Context) error {
	return a.apply(ctx, a.cfg.Load())
}

// vendorURL is the URL a vendor spec makes toolhub reach ("" for stdio).
func vendorURL(spec registry.Vendor) string {
	switch {
	case spec.A2A != nil:
		return spec.A2A.Card
	case spec.MCP != nil && spec.MCP.Transport != registry.TransportStdio:
		return spec.MCP.URL
	}
	return ""
}

// tryVendor connects to a vendor spec on the side, as the hub would, and
// returns its tools and the ones whose schemas were refused.
func (a *App) tryVendor(ctx context.Context, spec registry.Vendor) ([]registry.ToolDef, []string, error) {
	if spec.A2A != nil {
		return a.tryAgent(ctx, spec)
	}
	cat := registry.NewCatalog()
	m := servers.NewManager(cat, &servers.Options{Logger: a.log, LookupEnv: a.opts.LookupEnv, HTTPClient: a.Guard.Client(nil)})
	defer m.Close()
	if err := m.Add(ctx, spec); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		st := m.Status(spec.ID)
		switch {
		case st.State == servers.StateReady:
			var defs []registry.ToolDef
			for _, t := range cat.VendorTools(spec.ID) {
				defs = append(defs, t.Def)
			}
			var rejected []string
			for _, r := range st.Rejected {
				rejected = append(rejected, fmt.Sprintf("%s: %s: %s", r.Tool, r.Part, r.Error))
			}
			return defs, rejected, nil
		case st.State == servers.StateUnavailable && st.LastError != "":
			return nil, nil, errors.New(st.LastError)
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("no answer within 15s (state %s)", st.State)
		case <-time.After(20 * time.Millisecond): // polling the side connection
		}
	}
}

func (a *App) RemoveVendor(ctx context.Context, id string) error {
	if _, err := a.mayChange(ctx, id); err != nil {
		return err
	}
	old, err := a.Store.GetVendor(ctx, id)
	if err != nil {
		return badRequest("vendor %q is not registered at run time", id)
	}
	if err := a.Store.DeleteVendor(ctx, id); err != nil {
		return err
	}
	a.audit(ctx, "vendor.remove", id, old.Vendor, nil)
	return a.applyStored(ctx)
}

func (a *App) VendorVersions(ctx context.Context, id string) ([]registry.VendorRecord, error) {
	p := api.PrincipalFrom(ctx)
	if p.Role == auth.RoleVendor && p.Vendor != id {
		return nil, forbidden("a vendor key sees only its own vendor")
	}
	h, err := a.Store.VendorHistory(ctx, id)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, badRequest("vendor %q is not registered at run time", id)
	}
	return h, err
}

// RollbackVendor makes an earlier version current again (as a new version).
func (a *App) RollbackVendor(ctx context.Context, id string, version int64) (api.VendorChange, error) {
	if _, err := a.mayChange(ctx, id); err != nil {
		return api.VendorChange{}, err
	}
	h, err := a.Store.VendorHistory(ctx, id)
	if err != nil {
		return api.VendorChange{}, badRequest("vendor %q is not registered at run time", id)
	}
	i := slices.IndexFunc(h, func(r registry.VendorRecord) bool { return r.Version == version })
	if i < 0 {
		return api.VendorChange{}, badRequest("vendor %q has no version %d", id, version)
	}
	change, err := a.commitVendor(ctx, h[i].Vendor, api.VendorChange{Vendor: id, Status: "live"}, true, h[len(h)-1])
	if err == nil {
		a.audit(ctx, "vendor.rollback", id, h[len(h)-1].Vendor, h[i].Vendor)
	}
	return change, err
}

func (a *App) PendingVendors(ctx context.Context) []api.VendorChange {
	a.pendingMu.Lock()
	defer a.pendingMu.Unlock()
	out := make([]api.VendorChange, 0, len(a.pending))
	for _, p := range a.pending {
		out = append(out, p.change)
	}
	slices.SortFunc(out, func(x, y api.VendorChange) int { return cmpStr(x.Vendor, y.Vendor) })
	return out
}

// DecideVendor approves (puts live) or rejects a pending vendor change.
func (a *App) DecideVendor(ctx context.Context, id string, approve bool) (api.VendorChange, error) {
	a.pendingMu.Lock()
	pc, ok := a.pending[id]
	delete(a.pending, id)
	a.pendingMu.Unlock()
	if !ok {
		return api.VendorChange{}, badRequest("no change of vendor %q waits for approval", id)
	}
	if !approve {
		a.audit(ctx, "vendor.reject", id, nil, pc.spec)
		pc.change.Status = "rejected"
		return pc.change, nil
	}
	old, err := a.Store.GetVendor(ctx, id)
	change, err2 := a.commitVendor(ctx, pc.spec, pc.change, err == nil, old)
	if err2 == nil {
		a.audit(ctx, "vendor.approve", id, nil, pc.spec)
		change.Status = "live"
	}
	return change, err2
}

func (a *App) IssueKey(ctx context.Context, req api.KeyRequest) (string, auth.Key, error) {
	ttl, err := api.ParseTTL(req.TTL)
	if err != nil {
		return "", auth.Key{}, err
	}
	tok, k, err := auth.Issue(ctx, a.Keys, auth.Key{Role: req.Role, Tenant: req.Tenant, Vendor: req.Vendor, Name: req.Name}, ttl)
	if err != nil {
		return "", auth.Key{}, badRequest("%v", err)
	}
	a.audit(ctx, "key.issue", k.ID, nil, k)
	return tok, k, nil
}

func (a *App) ListKeys(ctx context.Context) ([]auth.Key, error) { return a.Keys.ListKeys(ctx) }

func (a *App) RotateKey(ctx context.Context, id string) (string, auth.Key, error) {
	tok, k, err := auth.Rotate(ctx, a.Keys, id)
	if errors.Is(err, auth.ErrNotFound) {
		return "", auth.Key{}, badRequest("no key %q", id)
	}
	if err == nil {
		a.audit(ctx, "key.rotate", id, nil, k)
	}
	return tok, k, err
}

func (a *App) RevokeKey(ctx context.Context, id string) error {
	err := auth.Revoke(ctx, a.Keys, id)
	if errors.Is(err, auth.ErrNotFound) {
		return badRequest("no key %q", id)
	}
	if err == nil {
		a.audit(ctx, "key.revoke", id, nil, nil)
	}
	return err
}

func (a *App) Audit(ctx context.Context, n int) (any, error) { return a.auditLog.read(n) }

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// tryAgent fetches and validates an A2A vendor's card on the side and
// returns the tools its skills become.
func (a *App) tryAgent(ctx context.Context, spec registry.Vendor) ([]registry.ToolDef, []string, error) {
	cat := registry.NewCatalog()
	m := a2a.NewManager(cat, &a2a.Options{Logger: a.log, HTTPClient: a.Guard.Client(nil), RefreshInterval: -1})
	defer m.Close()
	if err := m.Add(ctx, spec); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := m.Refresh(ctx, spec.ID); err != nil {
		return nil, nil, err
	}
	var defs []registry.ToolDef
	for _, t := range cat.VendorTools(spec.ID) {
		defs = append(defs, t.Def)
	}
	return defs, nil, nil
}
