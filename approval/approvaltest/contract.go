// Package approvaltest is the contract every [approval.Store] passes: the
// memory and SQLite stores in package approval, PostgreSQL in
// approval/pgapproval.
//
//	approvaltest.Run(t, func(t *testing.T) approval.Store { return approval.NewMemory() }, nil)
package approvaltest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/registry"
)

// Run runs the contract against stores made by newStore, each empty and
// closed when its test ends. reopen, if not nil, opens another store on
// the same changes as s (another hub on one database, or the same hub
// after a restart).
func Run(t *testing.T, newStore func(t *testing.T) approval.Store, reopen func(t *testing.T, s approval.Store) approval.Store) {
	t.Run("PutListTake", func(t *testing.T) { putListTake(t, newStore(t)) })
	t.Run("OneTaker", func(t *testing.T) { oneTaker(t, newStore(t)) })
	if reopen != nil {
		t.Run("Shared", func(t *testing.T) {
			a := newStore(t)
			shared(t, a, reopen(t, a))
		})
	}
}

// Change returns a sample change of vendor, submitted by its vendor key.
func Change(vendor string, n int) approval.Change {
	return approval.Change{
		Vendor: vendor,
		Spec: registry.Vendor{ID: vendor, Name: "Vendor " + vendor,
			MCP:     &registry.MCPSpec{Transport: registry.TransportHTTP, URL: fmt.Sprintf("http://v%d.example/mcp", n), Headers: map[string]string{"Authorization": "Bearer ${KEY}"}},
			Timeout: registry.Duration(3 * time.Second), Limits: registry.Limits{RPS: float64(n), Burst: 2},
			Probe: &registry.Probe{Tool: "ping", Args: map[string]any{"q": "x", "n": 1.0}}},
		Breaking: []string{`tool "current_weather" removed`, fmt.Sprintf("change %d", n)},
		Tools:    []string{"forecast"},
		Rejected: []string{"bad: input schema: nope"},
		By:       auth.Principal{KeyID: "00000000000000aa", Role: auth.RoleVendor, Vendor: vendor},
		At:       time.Date(2026, 1, 2, 3, 4, 5, n*1000, time.UTC),
	}
}

func putListTake(t *testing.T, s approval.Store) {
	ctx := t.Context()
	if l, err := s.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("a new store lists %v, %v", l, err)
	}
	if _, err := s.Take(ctx, "x"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("Take(nothing) = %v, want ErrNotFound", err)
	}
	if err := s.Put(ctx, approval.Change{}); err == nil {
		t.Error("Put took a change without a vendor")
	}
	for i, v := range []string{"zeta", "alpha", "mid"} {
		if err := s.Put(ctx, Change(v, i)); err != nil {
			t.Fatal(err)
		}
	}
	// A second change of a vendor replaces the first.
	if err := s.Put(ctx, Change("alpha", 7)); err != nil {
		t.Fatal(err)
	}
	want := []approval.Change{Change("alpha", 7), Change("mid", 2), Change("zeta", 0)}
	got, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	c, err := s.Take(ctx, "mid")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Change("mid", 2), c); diff != "" {
		t.Errorf("Take (-want +got):\n%s", diff)
	}
	if _, err := s.Take(ctx, "mid"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("Take of a taken change = %v, want ErrNotFound", err)
	}
	if got, err := s.List(ctx); err != nil || len(got) != 2 {
		t.Errorf("after Take: %d changes, %v; want 2", len(got), err)
	}
}

// Operators deciding at once: one of them gets the change.
func oneTaker(t *testing.T, s approval.Store) {
	ctx := t.Context()
	if err := s.Put(ctx, Change("v", 1)); err != nil {
		t.Fatal(err)
	}
	var got atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, err := s.Take(ctx, "v")
			switch {
			case err == nil:
				got.Add(1)
			case !errors.Is(err, approval.ErrNotFound):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got.Load() != 1 {
		t.Errorf("%d takers got the change, want 1", got.Load())
	}
}

func shared(t *testing.T, a, b approval.Store) {
	ctx := t.Context()
	if err := a.Put(ctx, Change("v", 1)); err != nil {
		t.Fatal(err)
	}
	got, err := b.List(ctx)
	if err != nil || len(got) != 1 {
		t.Fatalf("b lists %v, %v; want a's change", got, err)
	}
	if diff := cmp.Diff(Change("v", 1), got[0]); diff != "" {
		t.Errorf("b reads a's change (-want +got):\n%s", diff)
	}
	if _, err := b.Take(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Take(ctx, "v"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("a takes a change b took: %v", err)
	}
}
