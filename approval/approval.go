package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/registry"
)

// ErrNotFound is what Take returns when no change of the vendor waits.
var ErrNotFound = errors.New("approval: no change waits for this vendor")

// Change is a vendor change waiting for an operator.
type Change struct {
	Vendor   string          `json:"vendor"`
	Spec     registry.Vendor `json:"spec"`               // what goes live when approved
	Breaking []string        `json:"breaking,omitempty"` // why an operator must approve
	Tools    []string        `json:"tools,omitempty"`    // the tools the new spec serves
	Rejected []string        `json:"rejected,omitempty"` // its tools left out, with why
	// Defs are the tools the new spec was tried with: approving the
	// change pins them (registry.Pinner), so what the operator approved
	// is what is served.
	Defs []registry.ToolDef `json:"defs,omitempty"`
	By   auth.Principal     `json:"by"` // who submitted it
	At   time.Time          `json:"at"` // when
}

// Store keeps pending changes, at most one per vendor.
type Store interface {
	// Put stores c, replacing a change of the same vendor that waits.
	Put(ctx context.Context, c Change) error
	// List returns the waiting changes, by vendor.
	List(ctx context.Context) ([]Change, error)
	// Take removes the vendor's waiting change and returns it; of callers
	// taking at once (on any hub) exactly one gets it, the others
	// ErrNotFound.
	Take(ctx context.Context, vendor string) (Change, error)
	Close() error
}

// Memory is a [Store] in process memory: changes are lost on restart.
type Memory struct {
	mu sync.Mutex
	m  map[string]Change
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{m: map[string]Change{}} }

func (s *Memory) Put(_ context.Context, c Change) error {
	if c.Vendor == "" {
		return errors.New("approval: a change names its vendor")
	}
	b, err := json.Marshal(c) // a copy that shares nothing with the caller's
	if err != nil {
		return fmt.Errorf("approval: %v", err)
	}
	var cp Change
	_ = json.Unmarshal(b, &cp)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[c.Vendor] = cp
	return nil
}

func (s *Memory) List(context.Context) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Change, 0, len(s.m))
	for _, c := range s.m {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Vendor, b.Vendor) })
	return out, nil
}

func (s *Memory) Take(_ context.Context, vendor string) (Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[vendor]
	if !ok {
		return Change{}, fmt.Errorf("%w: %q", ErrNotFound, vendor)
	}
	delete(s.m, vendor)
	return c, nil
}

func (s *Memory) Close() error { return nil }

// Decode reads a stored change (JSON, as [registry.EncodeSpec] writes it).
func Decode(b []byte) (Change, error) {
	var c Change
	if err := json.Unmarshal(b, &c); err != nil {
		return Change{}, fmt.Errorf("approval: a stored change does not read: %v", err)
	}
	c.At = c.At.UTC()
	return c, nil
}
