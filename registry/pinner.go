package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Who a pin was made by when no operator made it.
const (
	PinnedFirstUse = "first-use"  // a vendor's tools the first time the hub saw them
	PinnedSchema   = "pin-schema" // a text change pin: schema lets through
)

// PinnerOptions configure a [Pinner]. Store is required.
type PinnerOptions struct {
	Store PinStore
	// Policy is a vendor's pin policy (PinStrict, PinSchema, PinOff); nil
	// or "": PinStrict.
	Policy func(vendor string) string
	// Scan, if set, is shown every tool version about to be served that
	// no operator approved (first use, a text change pin: schema lets
	// through, any tool of a pin: off vendor); a finding holds the tool,
	// with the findings as its reasons. nil: no scan.
	Scan func(ToolText) []Finding
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Logger; nil: slog.Default().
	Logger *slog.Logger
	// Timeout bounds the store calls of one gate; zero: 10 s.
	Timeout time.Duration
}

// Pinner decides which version of each vendor tool is served: the pinned
// one. Its [Pinner.Gate] goes in front of a [Catalog] ([Catalog.SetGate]);
// any difference from a tool's pin is stored as held, for an operator to
// approve ([Pinner.Approve]) or reject ([Pinner.Reject]), while the pinned
// version keeps serving. A tool with no pin, of a vendor that has pins, is
// held and not served; so is a tool whose pin is corrupt, and every tool
// of a vendor whose pins cannot be read (fail closed).
type Pinner struct {
	o  PinnerOptions
	mu sync.Mutex // one gate or decision at a time: each reads, then writes, the store
}

// NewPinner returns a Pinner; it panics without a store.
func NewPinner(o *PinnerOptions) *Pinner {
	if o == nil || o.Store == nil {
		panic("registry: PinnerOptions.Store is required")
	}
	p := &Pinner{o: *o}
	if p.o.Now == nil {
		p.o.Now = time.Now
	}
	if p.o.Logger == nil {
		p.o.Logger = slog.Default()
	}
	if p.o.Timeout <= 0 {
		p.o.Timeout = 10 * time.Second
	}
	if p.o.Policy == nil {
		p.o.Policy = func(string) string { return PinStrict }
	}
	return p
}

func (p *Pinner) policy(vendor string) string {
	if pol := p.o.Policy(vendor); pol != "" {
		return pol
	}
	return PinStrict
}

func (p *Pinner) scan(vendor string, d ToolDef) []Finding {
	if p.o.Scan == nil {
		return nil
	}
	return p.o.Scan(ToolText{Vendor: vendor, Def: d})
}

// Gate is a [Catalog] gate: of the definitions a vendor lists, it returns
// the ones to serve, storing what it holds. ok is false when the pins
// could not be read or written: the catalog then keeps what it serves.
func (p *Pinner) Gate(vendor string, defs []ToolDef) (serve []ToolDef, ok bool) {
	if len(defs) == 0 || p.o.Scan == nil && p.policy(vendor) == PinOff {
		return defs, true // nothing to compare or scan: the store is not read
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.o.Timeout)
	defer cancel()
	serve, err := p.gate(ctx, vendor, defs)
	if err != nil && p.policy(vendor) == PinOff {
		// A pin: off vendor does not depend on its pins: with the store
		// away (a hub started while PostgreSQL is down) its tools are
		// served as the scanner lets them, and a tool with a finding is
		// not served (it cannot be held for an operator until the store
		// answers).
		serve = serve[:0]
		for _, d := range defs {
			if len(p.scan(vendor, d)) == 0 {
				serve = append(serve, d)
			}
		}
		p.o.Logger.Warn("tool pins: the pin store is away; serving the pin: off vendor's tools the scan lets through", "vendor", vendor, "served", len(serve), "of", len(defs), "err", err)
		return serve, true
	}
	if err != nil {
		p.o.Logger.Error("tool pins: the vendor's tools are not updated (fail closed)", "vendor", vendor, "err", err)
		return nil, false
	}
	return serve, true
}

// gate is the vendor's tools to serve from defs against its pins under its
// pin policy: it pins what passes without an operator, holds what waits
// for one (with the scanner's findings), and drops the holds nothing waits
// for any longer.
func (p *Pinner) gate(ctx context.Context, vendor string, defs []ToolDef) ([]ToolDef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rows, err := p.o.Store.ToolPins(ctx, vendor)
	if err != nil {
		return nil, err
	}
	pins, held := splitPins(rows)
	// Any pin marks the vendor as pinned: a missing marker with pins
	// left is not a first use.
	marked := len(pins) > 0
	policy := p.policy(vendor)
	now := p.o.Now().UTC()
	var errs []error
	hold := func(d ToolDef, reasons []Finding) {
		h := held[d.Name]
		if h.Hash == PinHash(d) && h.Def.Name != "" && slices.Equal(h.Reasons, reasons) {
			delete(held, d.Name) // unchanged: kept as it is, with its time
			return
		}
		delete(held, d.Name)
		errs = append(errs, p.o.Store.PutToolPin(ctx, ToolPin{Vendor: vendor, Tool: d.Name, State: PinStateHeld,
			Hash: PinHash(d), Def: d, At: now, Reasons: reasons}))
	}
	pin := func(d ToolDef, by string) {
		errs = append(errs, p.o.Store.PutToolPin(ctx, ToolPin{Vendor: vendor, Tool: d.Name, State: PinStatePinned,
			Hash: PinHash(d), Def: d, At: now, By: by}))
	}
	var serve []ToolDef
	tofu := !marked && policy != PinOff
	for _, d := range defs {
		pn, pinned := pins[d.Name]
		switch {
		case pinned && pn.Corrupt():
			hold(d, []Finding{{Rule: "pin-corrupt", Span: "the stored pin does not match its hash"}})
		case pinned && pn.Hash == PinHash(d):
			delete(held, d.Name) // back to the pinned version: nothing waits
			serve = append(serve, d)
		case policy == PinOff || tofu || pinned && policy == PinSchema && SchemaHash(pn.Def) == SchemaHash(d):
			// Let through without an operator: still shown to the scanner.
			if f := p.scan(vendor, d); len(f) > 0 {
				hold(d, f)
				if pinned {
					serve = append(serve, pn.Def)
				}
				continue
			}
			delete(held, d.Name)
			if policy != PinOff {
				by := PinnedFirstUse
				if pinned {
					by = PinnedSchema
				}
				pin(d, by)
			}
			serve = append(serve, d)
		case pinned:
			hold(d, p.scan(vendor, d))
			serve = append(serve, pn.Def)
		default: // new, after the vendor's tools were pinned
			hold(d, p.scan(vendor, d))
		}
	}
	if tofu {
		errs = append(errs, p.o.Store.PutToolPin(ctx, ToolPin{Vendor: vendor, State: PinStatePinned, Hash: "marker", At: now, By: PinnedFirstUse}))
	}
	// What waited for a tool the vendor no longer lists, or lists as
	// pinned again, waits no more.
	for tool := range held {
		errs = append(errs, p.o.Store.DeleteToolPin(ctx, vendor, tool, PinStateHeld))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return serve, nil
}

// splitPins is a vendor's pin rows by tool: the pinned (the marker too)
// and the held.
func splitPins(rows []ToolPin) (pins, held map[string]ToolPin) {
	pins, held = map[string]ToolPin{}, map[string]ToolPin{}
	for _, r := range rows {
		if r.State == PinStateHeld {
			held[r.Tool] = r
		} else {
			pins[r.Tool] = r
		}
	}
	return pins, held
}

// Differences lists, without storing anything, the tools of defs that
// the gate would hold for vendor against its pins now: changed ones with
// their diffs, new ones (once the vendor has pins), ones whose pin is
// corrupt. A change submitted with defs can then wait for an operator
// before it is applied. The scanner is not asked.
func (p *Pinner) Differences(ctx context.Context, vendor string, defs []ToolDef) ([]HeldTool, error) {
	rows, err := p.o.Store.ToolPins(ctx, vendor)
	if err != nil {
		return nil, err
	}
	pins := map[string]ToolPin{}
	for _, r := range rows {
		if r.State == PinStatePinned {
			pins[r.Tool] = r
		}
	}
	policy := p.policy(vendor)
	if policy == PinOff || len(pins) == 0 {
		return nil, nil
	}
	var out []HeldTool
	for _, d := range defs {
		pn, pinned := pins[d.Name]
		switch {
		case pinned && pn.Corrupt():
			out = append(out, HeldTool{Tool: d.Name, Corrupt: true, Diff: PinDiff(nil, d)})
		case pinned && pn.Hash == PinHash(d):
		case pinned && policy == PinSchema && SchemaHash(pn.Def) == SchemaHash(d):
		case pinned:
			out = append(out, HeldTool{Tool: d.Name, Diff: PinDiff(&pn.Def, d)})
		default:
			out = append(out, HeldTool{Tool: d.Name, New: true, Diff: PinDiff(nil, d)})
		}
	}
	return out, nil
}

// Pin pins defs as vendor's approved tools (by: who approved), marks the
// vendor as pinned and drops what waited for those tools. A registration
// an operator made or approved pins the tools it was tried with.
func (p *Pinner) Pin(ctx context.Context, vendor string, defs []ToolDef, by string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.o.Now().UTC()
	var errs []error
	for _, d := range defs {
		errs = append(errs, p.o.Store.PutToolPin(ctx, ToolPin{Vendor: vendor, Tool: d.Name, State: PinStatePinned, Hash: PinHash(d), Def: d, At: now, By: by}),
			p.o.Store.DeleteToolPin(ctx, vendor, d.Name, PinStateHeld))
	}
	errs = append(errs, p.o.Store.PutToolPin(ctx, ToolPin{Vendor: vendor, State: PinStatePinned, Hash: "marker", At: now, By: by}))
	return errors.Join(errs...)
}

// Held lists the tool versions waiting for an operator, by vendor.
func (p *Pinner) Held(ctx context.Context) (map[string][]HeldTool, error) {
	rows, err := p.o.Store.ToolPins(ctx, "")
	if err != nil {
		return nil, err
	}
	pins := map[[2]string]ToolPin{}
	for _, r := range rows {
		if r.State == PinStatePinned {
			pins[[2]string{r.Vendor, r.Tool}] = r
		}
	}
	out := map[string][]HeldTool{}
	for _, r := range rows {
		if r.State != PinStateHeld {
			continue
		}
		h := HeldTool{Tool: r.Tool, Reasons: r.Reasons, Since: r.At}
		pn, ok := pins[[2]string{r.Vendor, r.Tool}]
		switch {
		case !ok:
			h.New, h.Diff = true, PinDiff(nil, r.Def)
		case pn.Corrupt():
			h.Corrupt, h.Diff = true, PinDiff(nil, r.Def)
		default:
			h.Diff = PinDiff(&pn.Def, r.Def)
		}
		out[r.Vendor] = append(out[r.Vendor], h)
	}
	return out, nil
}

// Approve pins every version of vendor's tools that waits (by: who
// approved) and returns their names; the catalog serves them once the
// vendor's tools go through the gate again ([Catalog.Regate]).
func (p *Pinner) Approve(ctx context.Context, vendor, by string) ([]string, error) {
	return p.decide(ctx, vendor, by, true)
}

// Reject drops every version of vendor's tools that waits and returns
// their names: the pinned versions keep serving. The same version listed
// again waits again.
func (p *Pinner) Reject(ctx context.Context, vendor string) ([]string, error) {
	return p.decide(ctx, vendor, "", false)
}

func (p *Pinner) decide(ctx context.Context, vendor, by string, approve bool) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rows, err := p.o.Store.ToolPins(ctx, vendor)
	if err != nil {
		return nil, err
	}
	var tools []string
	var errs []error
	now := p.o.Now().UTC()
	for _, r := range rows {
		if r.State != PinStateHeld {
			continue
		}
		if approve {
			if PinHash(r.Def) != r.Hash {
				errs = append(errs, fmt.Errorf("tool %q: the held version does not match its hash; not approved", r.Tool))
				continue
			}
			errs = append(errs, p.o.Store.PutToolPin(ctx, ToolPin{Vendor: vendor, Tool: r.Tool, State: PinStatePinned, Hash: r.Hash, Def: r.Def, At: now, By: by}))
		}
		errs = append(errs, p.o.Store.DeleteToolPin(ctx, vendor, r.Tool, PinStateHeld))
		tools = append(tools, r.Tool)
	}
	if approve && len(tools) > 0 {
		errs = append(errs, p.o.Store.PutToolPin(ctx, ToolPin{Vendor: vendor, State: PinStatePinned, Hash: "marker", At: now, By: by}))
	}
	return tools, errors.Join(errs...)
}

// Forget drops every pin and held version of a vendor (it was removed).
func (p *Pinner) Forget(ctx context.Context, vendor string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.o.Store.DeleteVendorPins(ctx, vendor)
}
