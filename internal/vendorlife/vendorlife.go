package vendorlife

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/netguard"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/servers"
)

// Status values of a [api.VendorChange] this package returns.
const (
	StatusLive     = "live"             // in force, as a new version
	StatusPending  = "pending_approval" // waits for an operator
	StatusRejected = "rejected"         // an operator said no
)

// Audit actions this package records (besides "vendor.register" and
// "vendor.update" when a change goes live).
const (
	ActionRollback = "vendor.rollback"
	ActionPending  = "vendor.pending"
	ActionApprove  = "vendor.approve"
	ActionReject   = "vendor.reject"
	ActionRemove   = "vendor.remove"
	ActionWithdraw = "vendor.withdraw" // a pending change dropped with its vendor
	// A held version of a vendor's tools (registry.Pinner) approved and
	// pinned, or rejected.
	ActionPinApprove = "vendor.pin.approve"
	ActionPinReject  = "vendor.pin.reject"
)

// Options configure a [Lifecycle]. Store, Approvals, Catalog and Guard are
// required; the zero value of every other field is documented.
type Options struct {
	Store     registry.Store    // vendors registered at run time, every version
	Approvals approval.Store    // changes waiting for an operator
	Catalog   *registry.Catalog // the tools in force: a change is compared with these
	Guard     *netguard.Policy  // where a vendor's URL may point; also the side connection's client
	// Pins are the tool pins gating Catalog: a registration, and a change
	// an operator makes, pins the tools it was tried with; a vendor key's
	// later change of a tool's text waits in Pins (held), and Pending and
	// Decide show and decide those too. nil: no pinning.
	Pins *registry.Pinner

	// Declared reports whether vendor id is declared in the config file:
	// such a vendor is changed there, never through this package. nil: none is.
	Declared func(id string) bool
	// AllowStdio reports whether operator keys may register stdio vendors
	// (admin.allow_stdio_vendors); asked at every change. nil: never.
	AllowStdio func() bool
	// Apply puts the stored vendors in force after a change. nil: nothing
	// is applied (the change is only stored).
	Apply func(ctx context.Context) error
	// Audit records one change: who (the principal in ctx), action, the
	// vendor, its spec before and after. nil: nothing is recorded.
	Audit func(ctx context.Context, action, target string, before, after any)
	// Logger; nil: slog.Default().
	Logger *slog.Logger
	// LookupEnv resolves ${VAR} in a spec tried on the side; nil: os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// TryTimeout bounds trying a spec on the side; zero: 15s.
	TryTimeout time.Duration
}

// Lifecycle registers, updates, versions, approves, rolls back and removes
// vendors registered at run time. Its methods take the caller's principal
// from ctx ([api.PrincipalFrom]). It is safe for concurrent use.
type Lifecycle struct {
	o Options
}

// New returns a Lifecycle. It panics if a required option is missing.
func New(o *Options) *Lifecycle {
	if o == nil || o.Store == nil || o.Approvals == nil || o.Catalog == nil || o.Guard == nil {
		panic("vendorlife: Options.Store, Approvals, Catalog and Guard are required")
	}
	l := &Lifecycle{o: *o}
	if l.o.Declared == nil {
		l.o.Declared = func(string) bool { return false }
	}
	if l.o.AllowStdio == nil {
		l.o.AllowStdio = func() bool { return false }
	}
	if l.o.Apply == nil {
		l.o.Apply = func(context.Context) error { return nil }
	}
	if l.o.Audit == nil {
		l.o.Audit = func(context.Context, string, string, any, any) {}
	}
	if l.o.Logger == nil {
		l.o.Logger = slog.Default()
	}
	if l.o.LookupEnv == nil {
		l.o.LookupEnv = os.LookupEnv
	}
	if l.o.TryTimeout <= 0 {
		l.o.TryTimeout = 15 * time.Second
	}
	return l
}

func forbidden(format string, args ...any) error {
	return &hub.Error{Code: hub.CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// StdioRefused refuses a stdio vendor that comes from the admin API (or
// from the registry the API writes to) unless allow (the config's
// admin.allow_stdio_vendors) is set: such a vendor runs a command on this
// host. Vendors in the config file are not asked.
func StdioRefused(allow bool, spec registry.Vendor) error {
	if spec.MCP == nil || spec.MCP.Transport != registry.TransportStdio || allow {
		return nil
	}
	return forbidden("vendor %q: a stdio vendor runs a command on this host: declare it in the config file, "+
		"or set admin.allow_stdio_vendors: true there to let operator keys register stdio vendors through the API", spec.ID)
}

// mayChange checks that the caller may change vendor id.
func (l *Lifecycle) mayChange(ctx context.Context, id string) (auth.Principal, error) {
	p := api.PrincipalFrom(ctx)
	if p.Role == auth.RoleVendor && p.Vendor != id {
		return p, forbidden("a vendor key changes only its own vendor (%q), not %q", p.Vendor, id)
	}
	if !p.Is(auth.RoleVendor, auth.RoleOperator) {
		return p, forbidden("vendor changes need a vendor or operator key")
	}
	if l.o.Declared(id) {
		return p, forbidden("vendor %q is declared in the config file; change it there and reload", id)
	}
	return p, nil
}

// Register validates a vendor spec — names, outbound safety, a connection
// and its tools' schemas — before it goes live: create registers a new
// vendor, !create updates one. An update that callers would notice (a tool
// removed, an argument now required, …) waits for an operator unless an
// operator made it.
func (l *Lifecycle) Register(ctx context.Context, spec registry.Vendor, create bool) (api.VendorChange, error) {
	return l.change(ctx, spec, create, "")
}

// change checks, tries and commits a vendor spec, or stores it for an
// operator to approve: a registration, an update, or a rollback to an
// earlier version (action [ActionRollback], audited when it goes live). A
// rollback is a change like any other: what it removes or loosens waits for
// an operator the same way.
func (l *Lifecycle) change(ctx context.Context, spec registry.Vendor, create bool, action string) (api.VendorChange, error) {
	p, err := l.mayChange(ctx, spec.ID)
	if err != nil {
		return api.VendorChange{}, err
	}
	if err := l.mayHave(p, spec); err != nil {
		return api.VendorChange{}, err
	}
	old, err := l.o.Store.GetVendor(ctx, spec.ID)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, registry.ErrNotFound):
		return api.VendorChange{}, err
	case create && exists:
		return api.VendorChange{}, badRequest("vendor %q exists; update it with PUT", spec.ID)
	case !create && !exists:
		return api.VendorChange{}, badRequest("vendor %q does not exist; register it with POST", spec.ID)
	}
	if u := OutboundURL(spec); u != "" {
		if err := l.o.Guard.CheckURL(ctx, u); err != nil {
			return api.VendorChange{}, guardError(spec.ID, err)
		}
	}
	defs, rejected, err := l.try(ctx, spec)
	if err != nil {
		return api.VendorChange{}, &hub.Error{Code: hub.CodeUnavailable, Vendor: spec.ID, Message: fmt.Sprintf("vendor %q did not pass its reachability probe: %v", spec.ID, err)}
	}
	change := api.VendorChange{Vendor: spec.ID, Status: StatusLive, Rejected: rejected}
	for _, d := range defs {
		change.Tools = append(change.Tools, d.Name)
	}
	if change.Breaking, change.Held, err = l.breaking(ctx, p, spec, exists, old, defs); err != nil {
		return api.VendorChange{}, err
	}
	if len(change.Breaking) > 0 && !p.Is(auth.RoleOperator) {
		change.Status = StatusPending
		// Stored (shared with every hub when postgres is set): an operator
		// may approve it on any hub, after any restart.
		if err := l.o.Approvals.Put(ctx, approval.Change{Vendor: spec.ID, Spec: spec, Breaking: change.Breaking,
			Tools: change.Tools, Rejected: change.Rejected, Defs: defs, By: p, At: time.Now().UTC()}); err != nil {
			return api.VendorChange{}, err
		}
		l.o.Audit(ctx, ActionPending, spec.ID, old.Vendor, spec)
		return change, nil
	}
	var pin []registry.ToolDef
	if !exists || p.Is(auth.RoleOperator) {
		pin = defs // registered, or an operator's own change: what was tried is approved
	}
	change, err = l.commit(ctx, spec, change, exists, old, pin)
	if err == nil && action != "" {
		l.o.Audit(ctx, action, spec.ID, old.Vendor, spec)
	}
	return change, err
}

// mayHave checks the spec, and that p may have it: a stdio vendor is an
// operator's, where the config allows them; a vendor key's spec refers only
// to its own environment and keeps to what self-service may set.
func (l *Lifecycle) mayHave(p auth.Principal, spec registry.Vendor) error {
	if err := spec.Validate(); err != nil {
		return badRequest("%v", err)
	}
	if spec.MCP != nil && spec.MCP.Transport == registry.TransportStdio && !p.Is(auth.RoleOperator) {
		return forbidden("only an operator registers a stdio vendor: it runs a command on the hub")
	}
	if err := StdioRefused(l.o.AllowStdio(), spec); err != nil {
		return err
	}
	if !p.Is(auth.RoleOperator) {
		if err := spec.CheckOwnEnvRefs(); err != nil {
			return forbidden("%v", err)
		}
		if err := spec.ValidateSelfService(); err != nil {
			return badRequest("%v", err)
		}
	}
	return nil
}

// breaking lists what of the change, to tools defs, callers would notice
// (against the live tools of an existing vendor), what lets more private
// data reach the vendor, and, for a vendor key's update, the tools that
// say something else than their pins (held, with their diffs).
func (l *Lifecycle) breaking(ctx context.Context, p auth.Principal, spec registry.Vendor, exists bool, old registry.VendorRecord, defs []registry.ToolDef) (breaking []string, held []registry.HeldTool, err error) {
	if exists {
		var live []registry.ToolDef
		for _, t := range l.o.Catalog.VendorTools(spec.ID) {
			live = append(live, t.Def)
		}
		breaking = registry.BreakingChanges(live, defs)
	}
	breaking = append(breaking, privacyLoosened(old.Vendor, spec)...)
	if exists && !p.Is(auth.RoleOperator) && l.o.Pins != nil {
		// What the tools now say to a model differs from what was pinned:
		// it waits like a breaking change, with its diff.
		held, err = l.o.Pins.Differences(ctx, spec.ID, defs)
		if err != nil {
			return nil, nil, err
		}
		for _, h := range held {
			breaking = append(breaking, h.Summary())
		}
	}
	return breaking, held, nil
}

// privacyLoosened lists how spec lets more private data reach its vendor
// than the vendor in force (the zero Vendor for a new one): a higher
// max_data_level, a redaction rule dropped, or result_scan turned off. A
// vendor key cannot do that by itself: like a breaking change, it waits
// for an operator. Changes that
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
	if old.ResultScan && !spec.ResultScan {
		out = append(out, "privacy: result_scan turned off")
	}
	return out
}

// commit stores spec as the vendor's new version, audits it and applies
// the stored vendors.
func (l *Lifecycle) commit(ctx context.Context, spec registry.Vendor, change api.VendorChange, exists bool, old registry.VendorRecord, pin []registry.ToolDef) (api.VendorChange, error) {
	if err := StdioRefused(l.o.AllowStdio(), spec); err != nil { // approvals and rollbacks too
		return api.VendorChange{}, err
	}
	if l.o.Pins != nil && len(pin) > 0 {
		// Pinned before it is applied: the live connection's first list
		// then meets the pins the registration was tried with.
		if err := l.o.Pins.Pin(ctx, spec.ID, pin, api.PrincipalFrom(ctx).KeyID); err != nil {
			return api.VendorChange{}, fmt.Errorf("vendor %q: pin its tools: %w", spec.ID, err)
		}
	}
	rec, err := l.o.Store.PutVendor(ctx, spec, -1, api.PrincipalFrom(ctx).KeyID)
	if err != nil {
		return api.VendorChange{}, err
	}
	change.Version = rec.Version
	action, before := "vendor.register", any(nil)
	if exists {
		action, before = "vendor.update", old.Vendor
	}
	l.o.Audit(ctx, action, spec.ID, before, spec)
	return change, l.o.Apply(ctx)
}

// OutboundURL is the URL a vendor spec makes toolhub reach ("" for stdio).
func OutboundURL(spec registry.Vendor) string {
	switch {
	case spec.A2A != nil:
		return spec.A2A.Card
	case spec.MCP != nil && spec.MCP.Transport != registry.TransportStdio:
		return spec.MCP.URL
	}
	return ""
}

// guardError turns the outbound guard's verdict on a vendor URL into the
// API's error: a refused address is forbidden; a name that does not
// resolve (now) is unavailable, not forbidden — nothing was refused.
func guardError(vendor string, err error) error {
	if errors.Is(err, netguard.ErrRefused) {
		return forbidden("vendor %q: %v", vendor, err)
	}
	return &hub.Error{Code: hub.CodeUnavailable, Vendor: vendor, Message: fmt.Sprintf("vendor %q: %v", vendor, err)}
}

// try connects to a vendor spec on the side, as the hub would, and
// returns its tools and the ones whose schemas were refused.
func (l *Lifecycle) try(ctx context.Context, spec registry.Vendor) ([]registry.ToolDef, []string, error) {
	if spec.A2A != nil {
		return l.tryAgent(ctx, spec)
	}
	cat := registry.NewCatalog()
	m := servers.NewManager(cat, &servers.Options{Logger: l.o.Logger, LookupEnv: l.o.LookupEnv, HTTPClient: l.o.Guard.Client(nil)})
	defer m.Close()
	if err := m.Add(ctx, spec); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, l.o.TryTimeout)
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
			return nil, nil, fmt.Errorf("no answer within %s (state %s)", l.o.TryTimeout, st.State)
		case <-time.After(20 * time.Millisecond): // polling the side connection
		}
	}
}

// tryAgent fetches and validates an A2A vendor's card on the side and
// returns the tools its skills become.
func (l *Lifecycle) tryAgent(ctx context.Context, spec registry.Vendor) ([]registry.ToolDef, []string, error) {
	cat := registry.NewCatalog()
	m := a2a.NewManager(cat, &a2a.Options{Logger: l.o.Logger, HTTPClient: l.o.Guard.Client(nil), RefreshInterval: -1, LookupEnv: l.o.LookupEnv})
	defer m.Close()
	if err := m.Add(ctx, spec); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, l.o.TryTimeout)
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

// Remove deletes a vendor registered at run time (with every version) and
// withdraws a change of it that waits for an operator.
func (l *Lifecycle) Remove(ctx context.Context, id string) error {
	if _, err := l.mayChange(ctx, id); err != nil {
		return err
	}
	old, err := l.o.Store.GetVendor(ctx, id)
	if err != nil {
		return badRequest("vendor %q is not registered at run time", id)
	}
	if err := l.o.Store.DeleteVendor(ctx, id); err != nil {
		return err
	}
	l.o.Audit(ctx, ActionRemove, id, old.Vendor, nil)
	if l.o.Pins != nil {
		if err := l.o.Pins.Forget(ctx, id); err != nil {
			l.o.Logger.Error("a removed vendor's tool pins are kept", "vendor", id, "err", err)
		}
	}
	// A change waiting for the vendor would bring it back if approved.
	if pc, err := l.o.Approvals.Take(ctx, id); err == nil {
		l.o.Audit(ctx, ActionWithdraw, id, nil, pc.Spec)
	} else if !errors.Is(err, approval.ErrNotFound) {
		l.o.Logger.Error("a removed vendor's pending change is kept", "vendor", id, "err", err)
	}
	return l.o.Apply(ctx)
}

// Versions lists a vendor's versions, oldest first, as the API shows them:
// header and env values (but the safe headers) and URL passwords masked,
// ${VAR} references kept ([registry.Vendor.Masked]). A vendor key sees
// only its own vendor.
func (l *Lifecycle) Versions(ctx context.Context, id string) ([]registry.VendorRecord, error) {
	p := api.PrincipalFrom(ctx)
	if p.Role == auth.RoleVendor && p.Vendor != id {
		return nil, forbidden("a vendor key sees only its own vendor")
	}
	h, err := l.o.Store.VendorHistory(ctx, id)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, badRequest("vendor %q is not registered at run time", id)
	}
	out := make([]registry.VendorRecord, len(h))
	for i, r := range h {
		r.Vendor = r.Vendor.Masked()
		out[i] = r
	}
	return out, err
}

// Rollback makes an earlier version current again (as a new version). The
// earlier version is checked and tried like a new one, and waits for an
// operator when the same change made by PUT would.
func (l *Lifecycle) Rollback(ctx context.Context, id string, version int64) (api.VendorChange, error) {
	if _, err := l.mayChange(ctx, id); err != nil {
		return api.VendorChange{}, err
	}
	h, err := l.o.Store.VendorHistory(ctx, id)
	if err != nil {
		return api.VendorChange{}, badRequest("vendor %q is not registered at run time", id)
	}
	i := slices.IndexFunc(h, func(r registry.VendorRecord) bool { return r.Version == version })
	if i < 0 {
		return api.VendorChange{}, badRequest("vendor %q has no version %d", id, version)
	}
	return l.change(ctx, h[i].Vendor, false, ActionRollback)
}

// Pending lists the vendor changes waiting for an operator, on every hub
// sharing the approval store.
func (l *Lifecycle) Pending(ctx context.Context) ([]api.VendorChange, error) {
	list, err := l.o.Approvals.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.VendorChange, 0, len(list))
	for _, c := range list {
		v := pendingView(c)
		if l.o.Pins != nil && len(c.Defs) > 0 {
			// The diff against the pins as they are now.
			if v.Held, err = l.o.Pins.Differences(ctx, c.Vendor, c.Defs); err != nil {
				return nil, err
			}
		}
		out = append(out, v)
	}
	if l.o.Pins == nil {
		return out, nil
	}
	held, err := l.o.Pins.Held(ctx)
	if err != nil {
		return nil, err
	}
	for vendor, hs := range held {
		i := slices.IndexFunc(out, func(c api.VendorChange) bool { return c.Vendor == vendor })
		if i < 0 {
			since := hs[0].Since
			for _, h := range hs {
				if h.Since.Before(since) {
					since = h.Since
				}
			}
			out = append(out, api.VendorChange{Vendor: vendor, Status: StatusPending, SubmittedAt: &since})
			i = len(out) - 1
		}
		out[i].Held = append(out[i].Held, hs...)
		for _, h := range hs {
			out[i].Breaking = append(out[i].Breaking, h.Summary())
		}
	}
	slices.SortStableFunc(out, func(a, b api.VendorChange) int { return strings.Compare(a.Vendor, b.Vendor) })
	return out, nil
}

// pendingView is a stored pending change as the API shows it.
func pendingView(c approval.Change) api.VendorChange {
	by, at := c.By, c.At
	return api.VendorChange{Vendor: c.Vendor, Status: StatusPending, Breaking: c.Breaking, Tools: c.Tools,
		Rejected: c.Rejected, SubmittedBy: &by, SubmittedAt: &at}
}

// Decide approves (puts live) or rejects a pending vendor change. Of
// operators deciding at once, on one hub or several, one decides; the
// others are told nothing waits.
func (l *Lifecycle) Decide(ctx context.Context, id string, approve bool) (api.VendorChange, error) {
	held, err := l.decideHeld(ctx, id, approve)
	if err != nil {
		return api.VendorChange{}, err
	}
	pc, err := l.o.Approvals.Take(ctx, id)
	if errors.Is(err, approval.ErrNotFound) {
		if held != nil {
			return *held, nil
		}
		return api.VendorChange{}, badRequest("no change of vendor %q waits for approval", id)
	}
	if err != nil {
		return api.VendorChange{}, err
	}
	change := api.VendorChange{Vendor: id, Breaking: pc.Breaking, Tools: pc.Tools, Rejected: pc.Rejected}
	if held != nil {
		change.Held = held.Held // decided with it
	}
	if !approve {
		l.o.Audit(ctx, ActionReject, id, nil, pc.Spec)
		change.Status = StatusRejected
		return change, nil
	}
	old, err := l.o.Store.GetVendor(ctx, id)
	// The tools it was tried with are approved with it.
	change, err2 := l.commit(ctx, pc.Spec, change, err == nil, old, pc.Defs)
	if err2 != nil {
		if change.Version > 0 { // stored; only applying it failed
			return change, err2
		}
		// Not stored: it waits again, unless the vendor submitted another since.
		if list, lerr := l.o.Approvals.List(ctx); lerr == nil && !slices.ContainsFunc(list, func(c approval.Change) bool { return c.Vendor == id }) {
			if perr := l.o.Approvals.Put(ctx, pc); perr != nil {
				l.o.Logger.Error("a pending vendor change that failed to apply is lost", "vendor", id, "err", perr)
			}
		}
		return change, err2
	}
	l.o.Audit(ctx, ActionApprove, id, nil, pc.Spec)
	change.Status = StatusLive
	return change, nil
}

// decideHeld approves (pins) or rejects the held versions of vendor id's
// tools; nil when none waited. An approved version is served at once (the
// catalog's gate runs again on what the vendor last listed).
func (l *Lifecycle) decideHeld(ctx context.Context, id string, approve bool) (*api.VendorChange, error) {
	if l.o.Pins == nil {
		return nil, nil
	}
	held, err := l.o.Pins.Held(ctx)
	if err != nil {
		return nil, err
	}
	hs := held[id]
	if len(hs) == 0 {
		return nil, nil
	}
	change := &api.VendorChange{Vendor: id, Held: hs}
	var tools []string
	if approve {
		tools, err = l.o.Pins.Approve(ctx, id, api.PrincipalFrom(ctx).KeyID)
		change.Status = StatusLive
	} else {
		tools, err = l.o.Pins.Reject(ctx, id)
		change.Status = StatusRejected
	}
	if err != nil {
		return nil, err
	}
	change.Tools = tools
	action := ActionPinReject
	if approve {
		action = ActionPinApprove
		for _, e := range l.o.Catalog.Regate(id) {
			l.o.Logger.Warn("an approved tool is refused by the catalog", "vendor", id, "err", e)
		}
	}
	l.o.Audit(ctx, action, id, nil, hs)
	return change, nil
}
