package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryStore is a [Store] in process memory.
type MemoryStore struct {
	mu      sync.Mutex
	now     func() time.Time
	vendors map[string][]VendorRecord
	tenants map[string]Tenant
	caps    map[string]Capability
	pins    map[[3]string]string // (vendor, tool, state) → the ToolPin as JSON
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{now: time.Now, vendors: map[string][]VendorRecord{}, tenants: map[string]Tenant{}, caps: map[string]Capability{}, pins: map[[3]string]string{}}
}

func (s *MemoryStore) PutVendor(_ context.Context, v Vendor, expect int64, by string) (VendorRecord, error) {
	if err := v.Validate(); err != nil {
		return VendorRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.vendors[v.ID]
	var cur int64
	if len(h) > 0 {
		cur = h[len(h)-1].Version
	}
	if expect >= 0 && expect != cur {
		return VendorRecord{}, fmt.Errorf("%w: vendor %q is at version %d, not %d", ErrVersionConflict, v.ID, cur, expect)
	}
	r := VendorRecord{Vendor: v.Clone(), Version: cur + 1, UpdatedAt: s.now().UTC().Truncate(time.Microsecond), UpdatedBy: by}
	s.vendors[v.ID] = append(h, r)
	r.Vendor = r.Vendor.Clone()
	return r, nil
}

func (s *MemoryStore) GetVendor(_ context.Context, id string) (VendorRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.vendors[id]
	if len(h) == 0 {
		return VendorRecord{}, fmt.Errorf("%w: vendor %q", ErrNotFound, id)
	}
	r := h[len(h)-1]
	r.Vendor = r.Vendor.Clone()
	return r, nil
}

func (s *MemoryStore) VendorHistory(_ context.Context, id string) ([]VendorRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.vendors[id]
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: vendor %q", ErrNotFound, id)
	}
	out := make([]VendorRecord, len(h))
	for i, r := range h {
		r.Vendor = r.Vendor.Clone()
		out[i] = r
	}
	return out, nil
}

func (s *MemoryStore) ListVendors(_ context.Context) ([]VendorRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]VendorRecord, 0, len(s.vendors))
	for _, h := range s.vendors {
		r := h[len(h)-1]
		r.Vendor = r.Vendor.Clone()
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b VendorRecord) int { return strings.Compare(a.Vendor.ID, b.Vendor.ID) })
	return out, nil
}

func (s *MemoryStore) DeleteVendor(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return deleteHeld(s.vendors, "vendor", id)
}

func (s *MemoryStore) PutTenant(_ context.Context, t Tenant) error {
	if err := t.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Tools = slices.Clone(t.Tools)
	s.tenants[t.ID] = t
	return nil
}

func (s *MemoryStore) GetTenant(_ context.Context, id string) (Tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tenants[id]
	if !ok {
		return Tenant{}, fmt.Errorf("%w: tenant %q", ErrNotFound, id)
	}
	t.Tools = slices.Clone(t.Tools)
	return t, nil
}

func (s *MemoryStore) ListTenants(_ context.Context) ([]Tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Tenant, 0, len(s.tenants))
	for _, t := range s.tenants {
		t.Tools = slices.Clone(t.Tools)
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Tenant) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *MemoryStore) DeleteTenant(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return deleteHeld(s.tenants, "tenant", id)
}

func (s *MemoryStore) PutCapability(_ context.Context, c Capability) error {
	if err := c.Compile(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caps[c.Name] = cloneCapability(c)
	return nil
}

func (s *MemoryStore) ListCapabilities(_ context.Context) ([]Capability, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Capability, 0, len(s.caps))
	for _, c := range s.caps {
		out = append(out, cloneCapability(c))
	}
	slices.SortFunc(out, func(a, b Capability) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *MemoryStore) DeleteCapability(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return deleteHeld(s.caps, "capability", name)
}

func (s *MemoryStore) PutToolPin(_ context.Context, p ToolPin) error {
	text, err := EncodeSpec(p)
	if err != nil {
		return fmt.Errorf("registry: put tool pin %q/%q: %w", p.Vendor, p.Tool, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pins[[3]string{p.Vendor, p.Tool, p.State}] = text
	return nil
}

func (s *MemoryStore) ToolPins(_ context.Context, vendor string) ([]ToolPin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []ToolPin{}
	for k, text := range s.pins {
		if vendor == "" || k[0] == vendor {
			out = append(out, DecodePin(k[0], k[1], k[2], "", []byte(text)))
		}
	}
	SortPins(out)
	return out, nil
}

// SetToolPinText replaces the stored text of a pin row, as a damaged
// database might hold it (for tests of failing closed).
func (s *MemoryStore) SetToolPinText(vendor, tool, state, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pins[[3]string{vendor, tool, state}] = text
}

func (s *MemoryStore) DeleteToolPin(_ context.Context, vendor, tool, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pins, [3]string{vendor, tool, state})
	return nil
}

func (s *MemoryStore) DeleteVendorPins(_ context.Context, vendor string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.pins {
		if k[0] == vendor {
			delete(s.pins, k)
		}
	}
	return nil
}

func (s *MemoryStore) Close() error { return nil }

// cloneCapability copies the spec fields only (compiled schemas are rebuilt
// by whoever serves it).
func cloneCapability(c Capability) Capability {
	out := Capability{Name: c.Name, Description: c.Description,
		InputSchema: slices.Clone(c.InputSchema), OutputSchema: slices.Clone(c.OutputSchema)}
	for _, s := range c.Chain {
		out.Chain = append(out.Chain, ChainStep{Tool: s.Tool, Args: slices.Clone(s.Args), Result: slices.Clone(s.Result)})
	}
	return out
}

// deleteHeld deletes key from m, or fails with ErrNotFound for a key m
// does not hold (kind names what it holds).
func deleteHeld[V any](m map[string]V, kind, key string) error {
	if _, ok := m[key]; !ok {
		return fmt.Errorf("%w: %s %q", ErrNotFound, kind, key)
	}
	delete(m, key)
	return nil
}
