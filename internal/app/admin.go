package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/servers"
)

var _ api.Admin = (*App)(nil)

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
	return a.changeVendor(ctx, spec, create, "")
}

// changeVendor checks, tries and commits a vendor spec, or stores it for an
// operator to approve: a registration, an update, or a rollback to an
// earlier version (action "vendor.rollback", audited when it goes live). A
// rollback is a change like any other: what it removes or loosens waits for
// an operator the same way.
func (a *App) changeVendor(ctx context.Context, spec registry.Vendor, create bool, action string) (api.VendorChange, error) {
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
	if err := stdioRefused(a.cfg.Load(), spec); err != nil {
		return api.VendorChange{}, err
	}
	if !p.Is(auth.RoleOperator) {
		if err := spec.CheckOwnEnvRefs(); err != nil {
			return api.VendorChange{}, forbidden("%v", err)
		}
		if err := spec.ValidateSelfService(); err != nil {
			return api.VendorChange{}, badRequest("%v", err)
		}
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
			return api.VendorChange{}, guardError(spec.ID, err)
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
	change.Breaking = append(change.Breaking, privacyLoosened(old.Vendor, spec)...)
	if len(change.Breaking) > 0 && !p.Is(auth.RoleOperator) {
		change.Status = "pending_approval"
		// Stored (shared with every hub when postgres is set): an operator
		// may approve it on any hub, after any restart.
		if err := a.approvals.Put(ctx, approval.Change{Vendor: spec.ID, Spec: spec, Breaking: change.Breaking,
			Tools: change.Tools, Rejected: change.Rejected, By: p, At: time.Now().UTC()}); err != nil {
			return api.VendorChange{}, err
		}
		a.audit(ctx, "vendor.pending", spec.ID, old.Vendor, spec)
		return change, nil
	}
	change, err = a.commitVendor(ctx, spec, change, exists, old)
	if err == nil && action != "" {
		a.audit(ctx, action, spec.ID, old.Vendor, spec)
	}
	return change, err
}

// privacyLoosened lists how spec lets more private data reach its vendor
// than the vendor in force (the zero Vendor for a new one): a higher
// max_data_level, or a redaction rule dropped. A vendor key cannot do that
// by itself: like a breaking change, it waits for an operator. Changes that
// send the vendor less (a lower level, a rule added) need no approval.
func privacyLoosened(old, spec registry.Vendor) []string {
	var out []string
	if spec.MaxDataLevel > old.MaxDataLevel {
		out = append(out, fmt.Sprintf("privacy: max_data_level raised from %d to %d", old.MaxDataLevel, spec.MaxDataLevel))
	}
	for _, r := range old.Redact {
		if !slices.Contains(spec.Redact, r) {
			out = append(out, fmt.Sprintf("privacy: redaction rule %q dropped", r))
		}
	}
	return out
}

func (a *App) commitVendor(ctx context.Context, spec registry.Vendor, change api.VendorChange, exists bool, old registry.VendorRecord) (api.VendorChange, error) {
	if err := stdioRefused(a.cfg.Load(), spec); err != nil { // approvals and rollbacks too
		return api.VendorChange{}, err
	}
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
	// A change waiting for the vendor would bring it back if approved.
	if pc, err := a.approvals.Take(ctx, id); err == nil {
		a.audit(ctx, "vendor.withdraw", id, nil, pc.Spec)
	} else if !errors.Is(err, approval.ErrNotFound) {
		a.log.Error("a removed vendor's pending change is kept", "vendor", id, "err", err)
	}
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
	return maskedHistory(h), err
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
	// The earlier version is checked and tried like a new one: rolling
	// back to it must not skip the approval the same change needs by PUT.
	return a.changeVendor(ctx, h[i].Vendor, false, "vendor.rollback")
}

// PendingVendors lists the vendor changes waiting for an operator, on
// every hub sharing the database.
func (a *App) PendingVendors(ctx context.Context) ([]api.VendorChange, error) {
	list, err := a.approvals.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.VendorChange, 0, len(list))
	for _, c := range list {
		out = append(out, pendingView(c))
	}
	return out, nil
}

// pendingView is a stored pending change as the API shows it.
func pendingView(c approval.Change) api.VendorChange {
	by, at := c.By, c.At
	return api.VendorChange{Vendor: c.Vendor, Status: "pending_approval", Breaking: c.Breaking, Tools: c.Tools,
		Rejected: c.Rejected, SubmittedBy: &by, SubmittedAt: &at}
}

// DecideVendor approves (puts live) or rejects a pending vendor change.
// Of operators deciding at once, on one hub or several, one decides; the
// others are told nothing waits.
func (a *App) DecideVendor(ctx context.Context, id string, approve bool) (api.VendorChange, error) {
	pc, err := a.approvals.Take(ctx, id)
	if errors.Is(err, approval.ErrNotFound) {
		return api.VendorChange{}, badRequest("no change of vendor %q waits for approval", id)
	}
	if err != nil {
		return api.VendorChange{}, err
	}
	change := api.VendorChange{Vendor: id, Breaking: pc.Breaking, Tools: pc.Tools, Rejected: pc.Rejected}
	if !approve {
		a.audit(ctx, "vendor.reject", id, nil, pc.Spec)
		change.Status = "rejected"
		return change, nil
	}
	old, err := a.Store.GetVendor(ctx, id)
	change, err2 := a.commitVendor(ctx, pc.Spec, change, err == nil, old)
	if err2 != nil {
		if change.Version > 0 { // stored; only applying it failed
			return change, err2
		}
		// Not stored: it waits again, unless the vendor submitted another since.
		if list, lerr := a.approvals.List(ctx); lerr == nil && !slices.ContainsFunc(list, func(c approval.Change) bool { return c.Vendor == id }) {
			if perr := a.approvals.Put(ctx, pc); perr != nil {
				a.log.Error("a pending vendor change that failed to apply is lost", "vendor", id, "err", perr)
			}
		}
		return change, err2
	}
	a.audit(ctx, "vendor.approve", id, nil, pc.Spec)
	change.Status = "live"
	return change, nil
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
	if errors.Is(err, auth.ErrEnded) {
		return "", auth.Key{}, badRequest("%v", err)
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

// Audit returns the newest n audit entries, oldest first
// (DefaultAuditEntries when n <= 0), from the log every hub sharing the
// database writes to.
func (a *App) Audit(ctx context.Context, n int) (any, error) {
	if n <= 0 {
		n = DefaultAuditEntries
	}
	return a.auditLog.Recent(ctx, n)
}

// tryAgent fetches and validates an A2A vendor's card on the side and
// returns the tools its skills become.
func (a *App) tryAgent(ctx context.Context, spec registry.Vendor) ([]registry.ToolDef, []string, error) {
	cat := registry.NewCatalog()
	m := a2a.NewManager(cat, &a2a.Options{Logger: a.log, HTTPClient: a.Guard.Client(nil), RefreshInterval: -1, LookupEnv: a.opts.LookupEnv})
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
