package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolhub/toolhub/internal/x/cowmap"
	"github.com/toolhub/toolhub/internal/x/fanout"
)

// Entry is what a catalog name resolves to: a vendor tool or a capability.
type Entry struct {
	Name       string // the catalog name
	Tool       *Tool
	Capability *Capability
}

// Change tells subscribers that the catalog moved to a new version.
type Change struct {
	Version uint64
	Vendor  string // the vendor whose tools changed; "" for capabilities
}

// Catalog is the live set of tools and capabilities. Reads are lock-free
// (an immutable snapshot behind an atomic pointer); writes copy the
// snapshot. The zero value is not usable; call [NewCatalog].
type Catalog struct {
	mu   sync.Mutex // serialises writers
	snap atomic.Pointer[snapshot]

	subs fanout.List[Change]

	gateMu  sync.Mutex
	gate    Gate
	offered map[string][]ToolDef // per vendor, what it last listed (with a gate set)
}

// Gate decides which of a vendor's listed definitions the catalog serves
// ([Pinner.Gate] is one). ok false keeps what the catalog serves for the
// vendor now.
type Gate func(vendor string, defs []ToolDef) (serve []ToolDef, ok bool)

// SetGate puts g in front of [Catalog.SetVendorTools]; nil: every listed
// definition is served. [Catalog.RemoveVendor] does not go through it.
func (c *Catalog) SetGate(g Gate) {
	c.gateMu.Lock()
	defer c.gateMu.Unlock()
	c.gate = g
	c.offered = map[string][]ToolDef{}
}

// Regate puts what vendor last listed through the gate again (after an
// operator approved some of it). It does nothing for a vendor with no
// tools listed since the gate was set, or removed since.
func (c *Catalog) Regate(vendor string) []error {
	c.gateMu.Lock()
	defs, ok := c.offered[vendor]
	c.gateMu.Unlock()
	if !ok {
		return nil
	}
	return c.SetVendorTools(vendor, defs)
}

// A snapshot's maps are copied shard by shard on write (cowmap), so a
// change of one vendor costs its own tools, not the catalog's: registering
// n vendors one by one is linear in n.
type snapshot struct {
	version  uint64
	byName   *cowmap.Map[Entry]
	byVendor *cowmap.Map[[]*Tool] // sorted by catalog name
	caps     []*Capability        // sorted by name
	log      []Change             // the last changes, oldest first (at most changeLog)
}

// changeLog is how many changes a snapshot remembers for ChangedSince.
const changeLog = 64

// ChangedSince returns the vendors whose tools changed after version (each
// once, in no set order), so that a reader that built something from that
// version updates only them. ok is false when the catalog no longer
// remembers that far back or the capabilities changed since: read it all.
func (c *Catalog) ChangedSince(version uint64) (vendors []string, ok bool) {
	s := c.snap.Load()
	if version >= s.version {
		return nil, version == s.version
	}
	if len(s.log) == 0 || s.log[0].Version > version+1 {
		return nil, false
	}
	seen := map[string]bool{}
	for _, ch := range s.log {
		if ch.Version <= version {
			continue
		}
		if ch.Vendor == "" {
			return nil, false
		}
		if !seen[ch.Vendor] {
			seen[ch.Vendor] = true
			vendors = append(vendors, ch.Vendor)
		}
	}
	return vendors, true
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	c := &Catalog{}
	c.snap.Store(&snapshot{byName: &cowmap.Map[Entry]{}, byVendor: &cowmap.Map[[]*Tool]{}})
	return c
}

// Version increases with every change.
func (c *Catalog) Version() uint64 { return c.snap.Load().version }

// Lookup resolves a catalog name (a vendor tool's catalog name, or a
// capability's dotted or underscored name).
func (c *Catalog) Lookup(name string) (Entry, bool) {
	return c.snap.Load().byName.Get(name)
}

// VendorTool finds a vendor's tool by its own name at the vendor.
func (c *Catalog) VendorTool(vendor, tool string) (*Tool, bool) {
	ts, _ := c.snap.Load().byVendor.Get(vendor)
	for _, t := range ts {
		if t.Def.Name == tool {
			return t, true
		}
	}
	return nil, false
}

// VendorTools returns a vendor's tools, sorted by catalog name.
func (c *Catalog) VendorTools(vendor string) []*Tool {
	ts, _ := c.snap.Load().byVendor.Get(vendor)
	return ts
}

// EachVendor calls fn with every vendor that has tools and its tools
// (sorted by catalog name), in no set order, from one version of the
// catalog. The slice is the catalog's: a vendor whose tools did not change
// between two versions has the same slice (same first element and length)
// in both. fn must not modify it.
func (c *Catalog) EachVendor(fn func(vendor string, tools []*Tool)) {
	c.snap.Load().byVendor.Range(func(v string, ts []*Tool) bool {
		fn(v, ts)
		return true
	})
}

// Vendors returns the ids of vendors that have tools in the catalog.
func (c *Catalog) Vendors() []string {
	s := c.snap.Load()
	ids := make([]string, 0, s.byVendor.Len())
	s.byVendor.Range(func(id string, _ []*Tool) bool {
		ids = append(ids, id)
		return true
	})
	slices.Sort(ids)
	return ids
}

// Tools returns every vendor tool, sorted by catalog name.
func (c *Catalog) Tools() []*Tool {
	s := c.snap.Load()
	out := make([]*Tool, 0, s.byName.Len())
	s.byVendor.Range(func(_ string, ts []*Tool) bool {
		out = append(out, ts...)
		return true
	})
	slices.SortFunc(out, func(a, b *Tool) int { return strings.Compare(a.Catalog, b.Catalog) })
	return out
}

// Capabilities returns the served capabilities, sorted by name.
func (c *Catalog) Capabilities() []*Capability { return c.snap.Load().caps }

// SetVendorTools replaces a vendor's tools. Each definition is compiled; a
// tool whose name or schema is bad is left out and reported in the returned
// errors (one *ToolError each), while the vendor's other tools are served.
// Setting the same definitions again changes nothing and notifies no one.
func (c *Catalog) SetVendorTools(vendor string, defs []ToolDef) []error {
	c.gateMu.Lock()
	gate := c.gate
	if gate != nil {
		c.offered[vendor] = slices.Clone(defs)
	}
	c.gateMu.Unlock()
	if gate != nil {
		serve, ok := gate(vendor, defs)
		if !ok {
			return nil
		}
		defs = serve
	}
	return c.setVendorTools(vendor, defs)
}

func (c *Catalog) setVendorTools(vendor string, defs []ToolDef) []error {
	c.mu.Lock()
	old := c.snap.Load()
	var errs []error
	tools := make([]*Tool, 0, len(defs))
	seen := map[string]bool{}
	taken := func(name string) bool {
		e, ok := old.byName.Get(name)
		return ok && (e.Tool == nil || e.Tool.Vendor != vendor)
	}
	size := 0 // bytes of the definitions taken, against MaxVendorCatalogBytes
	for _, d := range defs {
		if len(tools) >= MaxVendorTools || size+DefBytes(d) > MaxVendorCatalogBytes {
			errs = append(errs, &ToolError{Vendor: vendor, Tool: truncName(d.Name), Part: "catalog",
				Err: fmt.Errorf("the vendor's tools are over %d tools or %d bytes of definitions", MaxVendorTools, MaxVendorCatalogBytes)})
			continue
		}
		if seen[d.Name] {
			errs = append(errs, &ToolError{Vendor: vendor, Tool: d.Name, Part: "name", Err: fmt.Errorf("listed twice; the first one is served")})
			continue
		}
		t, err := NewTool(vendor, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if taken(t.Catalog) || slices.ContainsFunc(tools, func(o *Tool) bool { return o.Catalog == t.Catalog }) {
			// A crafted or shortened name met another: the longer hash
			// keeps both tools reachable and the choice deterministic.
			t.Catalog = catalogName(vendor, d.Name, 16)
			if taken(t.Catalog) {
				errs = append(errs, &ToolError{Vendor: vendor, Tool: d.Name, Part: "name", Err: fmt.Errorf("catalog name %q is taken", t.Catalog)})
				continue
			}
		}
		seen[d.Name] = true
		size += DefBytes(d)
		tools = append(tools, t)
	}
	slices.SortFunc(tools, func(a, b *Tool) int { return strings.Compare(a.Catalog, b.Catalog) })
	was, _ := old.byVendor.Get(vendor)
	if sameTools(was, tools) {
		c.mu.Unlock()
		return errs
	}
	next := old.clone()
	for _, t := range was {
		next.byName.Delete(t.Catalog)
	}
	if len(tools) == 0 {
		next.byVendor.Delete(vendor)
	} else {
		next.byVendor.Set(vendor, tools)
	}
	for _, t := range tools {
		next.byName.Set(t.Catalog, Entry{Name: t.Catalog, Tool: t})
	}
	c.publish(next, vendor)
	return errs
}

// RemoveVendor drops all of a vendor's tools.
func (c *Catalog) RemoveVendor(vendor string) {
	c.gateMu.Lock()
	delete(c.offered, vendor)
	c.gateMu.Unlock()
	c.setVendorTools(vendor, nil)
}

// SetCapabilities replaces the capabilities. A capability that does not
// compile, or whose name is taken, is left out and reported.
func (c *Catalog) SetCapabilities(caps []Capability) []error {
	c.mu.Lock()
	old := c.snap.Load()
	next := old.clone()
	for _, cp := range old.caps {
		next.byName.Delete(cp.Name)
		next.byName.Delete(cp.CatalogName())
	}
	next.caps = nil
	var errs []error
	for i := range caps {
		cp := caps[i]
		if err := cp.Compile(); err != nil {
			errs = append(errs, err)
			continue
		}
		if next.byName.Has(cp.CatalogName()) {
			errs = append(errs, fmt.Errorf("capability %q: name %q is already taken", cp.Name, cp.CatalogName()))
			continue
		}
		e := Entry{Name: cp.CatalogName(), Capability: &cp}
		next.byName.Set(cp.Name, e)
		next.byName.Set(cp.CatalogName(), e)
		next.caps = append(next.caps, &cp)
	}
	slices.SortFunc(next.caps, func(a, b *Capability) int { return strings.Compare(a.Name, b.Name) })
	c.publish(next, "")
	return errs
}

// Subscribe calls fn after every change, until cancel is called. fn runs on
// the writer's goroutine and must not block; it should read the catalog
// again rather than trust the order of changes.
func (c *Catalog) Subscribe(fn func(Change)) (cancel func()) {
	return c.subs.Subscribe(fn)
}

// publish stores next and notifies subscribers; it unlocks c.mu.
func (c *Catalog) publish(next *snapshot, vendor string) {
	next.version++
	log := make([]Change, 0, changeLog)
	log = append(log, next.log[max(0, len(next.log)-changeLog+1):]...)
	next.log = append(log, Change{Version: next.version, Vendor: vendor})
	c.snap.Store(next)
	c.mu.Unlock()
	c.subs.Emit(Change{Version: next.version, Vendor: vendor})
}

// clone is the next version's snapshot: it shares s's shards until it
// writes them. s is published and never written again.
func (s *snapshot) clone() *snapshot {
	return &snapshot{version: s.version, byName: s.byName.Fork(), byVendor: s.byVendor.Fork(), caps: s.caps, log: s.log}
}

func sameTools(a, b []*Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Catalog != b[i].Catalog || !sameDef(a[i].Def, b[i].Def) {
			return false
		}
	}
	return true
}

func sameDef(a, b ToolDef) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
