package vendorconn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// Errors are the protocol package's own sentinels, returned wrapped with
// the vendor id ("%w: %q").
type Errors struct {
	Closed    error // the manager is closed
	Duplicate error // Add of an id already held
	Unknown   error // Update or Remove of an id not held
}

// Set holds a manager's vendors by id. Its zero value is not usable; make
// one with [NewSet]. It is safe for concurrent use.
type Set[V comparable] struct {
	cat  *registry.Catalog
	errs Errors

	mu      sync.RWMutex
	vendors map[string]V
	closed  bool

	toolsMu sync.Mutex // orders catalog writes against vendor replacement
	wg      sync.WaitGroup
}

// NewSet returns an empty set whose vendors' tools go to cat.
func NewSet[V comparable](cat *registry.Catalog, errs Errors) *Set[V] {
	return &Set[V]{cat: cat, errs: errs, vendors: map[string]V{}}
}

// Get returns the vendor held as id.
func (s *Set[V]) Get(id string) (V, bool) {
	s.mu.RLock()
	v, ok := s.vendors[id]
	s.mu.RUnlock()
	return v, ok
}

// All returns the vendors held, in no order.
func (s *Set[V]) All() []V {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]V, 0, len(s.vendors))
	for _, v := range s.vendors {
		out = append(out, v)
	}
	return out
}

// Add holds the vendor newV makes as id and starts it, both under the
// set's lock (so Close cannot miss it). It fails with Errors.Closed or
// Errors.Duplicate.
func (s *Set[V]) Add(id string, newV func() V, start func(V)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.errs.Closed
	}
	if _, dup := s.vendors[id]; dup {
		return fmt.Errorf("%w: %q", s.errs.Duplicate, id)
	}
	v := newV()
	s.vendors[id] = v
	start(v)
	return nil
}

// AddSpec holds and starts a vendor of spec (see [Set.Add]), for a
// manager's Add: check refuses a spec that is not the protocol's or not
// valid, and newV gets a clone of spec, so the caller's later edits do not
// reach the vendor.
func (s *Set[V]) AddSpec(ctx context.Context, spec registry.Vendor, check func(registry.Vendor) error, newV func(registry.Vendor) V, start func(V)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := check(spec); err != nil {
		return err
	}
	spec = spec.Clone()
	return s.Add(spec.ID, func() V { return newV(spec) }, start)
}

// Upstream returns the invoker of the vendor held as id, for a manager's
// [hub.Upstreams]; false for an id not held.
func Upstream[V interface {
	comparable
	hub.Invoker
}](s *Set[V], id string) (hub.Invoker, bool) {
	v, ok := s.Get(id)
	if !ok {
		return nil, false
	}
	return v, true
}

// Replace asks change what to do with the vendor held as id: it either
// changes old in place (and returns replace false), or returns the vendor
// that takes old's place. Both happen under the set's locks, catalog
// writes included, so a replaced vendor cannot write the catalog after its
// successor has, and two replacements of one id cannot both take old's
// place. It returns old and the new vendor (the zero V when none); the
// caller stops old and starts the new one. It fails with Errors.Closed or
// Errors.Unknown.
func (s *Set[V]) Replace(id string, change func(old V) (nv V, replace bool)) (old, nv V, err error) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero V
	if s.closed {
		return zero, zero, s.errs.Closed
	}
	old, ok := s.vendors[id]
	if !ok {
		return zero, zero, fmt.Errorf("%w: %q", s.errs.Unknown, id)
	}
	nv, replace := change(old)
	if !replace {
		return old, zero, nil
	}
	s.vendors[id] = nv
	return old, nv, nil
}

// Remove lets go of the vendor held as id and removes its tools from the
// catalog; the caller stops it. It fails with Errors.Unknown.
func (s *Set[V]) Remove(id string) (V, error) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.mu.Lock()
	v, ok := s.vendors[id]
	delete(s.vendors, id)
	s.mu.Unlock()
	if !ok {
		return v, fmt.Errorf("%w: %q", s.errs.Unknown, id)
	}
	s.cat.RemoveVendor(id)
	return v, nil
}

// SetTools writes v's tools to the catalog, unless v has been replaced or
// removed meanwhile, or alive (asked under the lock) says it has stopped.
// It reports whether it wrote, and the tools the catalog refused.
func (s *Set[V]) SetTools(id string, v V, alive func() bool, defs []registry.ToolDef) ([]error, bool) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.mu.RLock()
	cur := s.vendors[id]
	s.mu.RUnlock()
	if cur != v || !alive() {
		return nil, false
	}
	return s.cat.SetVendorTools(id, defs), true
}

// Track counts a background job that [Set.Wait] waits for; it reports
// false when the set is closed and the job must not start. The job calls
// [Set.Done] when it ends.
func (s *Set[V]) Track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// Done ends a job [Set.Track] counted.
func (s *Set[V]) Done() { s.wg.Done() }

// Go runs f in the background unless the set is closed; Wait waits for it.
func (s *Set[V]) Go(f func()) {
	if !s.Track() {
		return
	}
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Close marks the set closed (Add, Replace, Track and Go refuse from now
// on), calls onClose (if not nil) under the lock, and returns the vendors
// held for the caller to stop; first is false when it was closed already.
func (s *Set[V]) Close(onClose func()) (vs []V, first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	s.closed = true
	if onClose != nil {
		onClose()
	}
	vs = make([]V, 0, len(s.vendors))
	for _, v := range s.vendors {
		vs = append(vs, v)
	}
	return vs, true
}

// Wait waits for the background jobs of [Set.Track] and [Set.Go].
func (s *Set[V]) Wait() { s.wg.Wait() }

// Plan is what a reload (a manager's Sync) does to a set: the specs
// wanted, by id, in the order given; the ids held and no longer wanted,
// sorted; and the specs held now, to compare.
type Plan struct {
	Want  map[string]registry.Vendor
	Order []string
	Gone  []string
	Have  map[string]registry.Vendor
	// Errs say which specs were left out (an id listed twice).
	Errs []error
}

// PlanSync compares specs (those keep accepts: the protocol's own) with
// the vendors held, whose specs spec copies.
func PlanSync[V comparable](s *Set[V], specs []registry.Vendor, keep func(registry.Vendor) bool, spec func(V) registry.Vendor) Plan {
	p := Plan{Want: map[string]registry.Vendor{}, Have: map[string]registry.Vendor{}}
	for _, sp := range specs {
		if !keep(sp) {
			continue
		}
		if _, dup := p.Want[sp.ID]; dup {
			p.Errs = append(p.Errs, fmt.Errorf("vendor %q is listed twice; the first is used", sp.ID))
			continue
		}
		p.Want[sp.ID] = sp
		p.Order = append(p.Order, sp.ID)
	}
	s.mu.RLock()
	for id, v := range s.vendors {
		p.Have[id] = spec(v)
		if _, ok := p.Want[id]; !ok {
			p.Gone = append(p.Gone, id)
		}
	}
	s.mu.RUnlock()
	slices.Sort(p.Gone)
	return p
}

// SameJSON reports whether a and b encode to the same JSON: how a spec,
// or one section of it, is compared with the one held.
func SameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
