// Package budgettest is the contract every [billing.BudgetStore] passes,
// directly and through [billing.Budgets.Middleware].
package budgettest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// Run runs the contract against stores made by open (fresh and empty each
// time: use a unique key prefix).
func Run(t *testing.T, open func(t *testing.T) billing.BudgetStore) {
	ctx := context.Background()
	line := func(k string, limit billing.Micros) billing.Line {
		return billing.Line{Key: k, Limit: limit, TTL: time.Hour}
	}
	t.Run("ReserveUpToTheLimit", func(t *testing.T) {
		s := open(t)
		ls := []billing.Line{line("a", 10), line("b", 100)}
		for i := range 5 {
			spent, ok, err := s.Reserve(ctx, ls, 2)
			if err != nil || !ok || spent[0] != billing.Micros(2*(i+1)) || spent[1] != billing.Micros(2*(i+1)) {
				t.Fatalf("reserve %d = %v, %v, %v", i, spent, ok, err)
			}
		}
		spent, ok, err := s.Reserve(ctx, ls, 1)
		if err != nil || ok || spent[0] != 10 {
			t.Fatalf("reserve past the limit = %v, %v, %v; want refused at 10", spent, ok, err)
		}
		// Refused: nothing changed, on any line.
		if got, _ := s.Spent(ctx, "b"); got != 10 {
			t.Errorf("b spent %v after a refusal, want 10", got)
		}
		// A free call passes even at the limit.
		if _, ok, _ := s.Reserve(ctx, ls, 0); !ok {
			t.Errorf("a free call was refused")
		}
	})
	t.Run("AdjustReleasesAndCharges", func(t *testing.T) {
		s := open(t)
		ls := []billing.Line{line("a", 10)}
		if _, ok, _ := s.Reserve(ctx, ls, 10); !ok {
			t.Fatal("refused")
		}
		if err := s.Adjust(ctx, ls, -7); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Spent(ctx, "a"); got != 3 {
			t.Errorf("spent = %v, want 3", got)
		}
		if _, ok, _ := s.Reserve(ctx, ls, 7); !ok {
			t.Error("7 more refused with 3 of 10 spent")
		}
		if got, _ := s.Spent(ctx, "unknown"); got != 0 {
			t.Errorf("unknown key spent %v", got)
		}
	})
	t.Run("ConcurrentReservationsNeverOverspend", func(t *testing.T) {
		s := open(t)
		ls := []billing.Line{line("tenant", 100), line("tenant-vendor", 1000)}
		var wg sync.WaitGroup
		var passed atomic.Int64
		start := make(chan struct{})
		for range 200 {
			wg.Go(func() {
				<-start
				_, ok, err := s.Reserve(ctx, ls, 1)
				if err != nil {
					t.Error(err)
				}
				if ok {
					passed.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if passed.Load() != 100 {
			t.Errorf("%d of 200 reservations passed a budget for 100", passed.Load())
		}
	})
	t.Run("MiddlewareRace", func(t *testing.T) { middlewareRace(t, open(t)) })
}

// middlewareRace sends 200 concurrent first calls through the budget
// middleware with a budget for 100 calls: at most 100 reach the vendor,
// and the others fail with budget_exceeded.
func middlewareRace(t *testing.T, store billing.BudgetStore) {
	book, err := billing.NewPriceBook(billing.Config{Prices: []billing.VersionConfig{{
		Version: "v1", Entries: []billing.PriceEntry{{Vendor: "v", Tenant: billing.Rate{PerCall: 10_000}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	b, err := billing.NewBudgets([]billing.BudgetRule{{Tenant: "acme", Period: billing.PeriodMonth, Limit: 1_000_000}},
		&billing.BudgetOptions{Pricer: billing.NewPricer(book, nil), Store: store, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	tool := VendorTool(t, "v", "t")
	var reached, refused atomic.Int64
	var arrived sync.WaitGroup // every call either refused or holding at the vendor
	arrived.Add(200)
	release := make(chan struct{})
	inv := hub.Chain(hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		reached.Add(1)
		arrived.Done()
		<-release // hold every admitted call open: no reservation is settled yet
		c.Trace.Attempts = append(c.Trace.Attempts, hub.Attempt{Vendor: "v", Tool: "t", Outcome: "ok"})
		return &hub.Result{Provenance: hub.Provenance{Vendor: "v", Tool: "t"}}, nil
	}), b.Middleware())
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			c := &hub.Call{ID: fmt.Sprint("c", i), Tenant: "acme", Tool: tool, Start: at, Trace: &hub.Trace{}}
			_, err := inv.Invoke(context.Background(), c)
			if hub.CodeOf(err) == hub.CodeBudgetExceeded {
				refused.Add(1)
				arrived.Done()
			} else if err != nil {
				t.Error(err)
			}
		})
	}
	arrived.Wait()
	close(release)
	wg.Wait()
	if reached.Load() != 100 || refused.Load() != 100 {
		t.Errorf("%d calls reached the vendor and %d were refused; want 100 and 100", reached.Load(), refused.Load())
	}
	spent, err := b.Spent(context.Background(), "acme", "", billing.PeriodMonth, at)
	if err != nil || spent != 1_000_000 {
		t.Errorf("spent = %v, %v; want 1.000000 after settling", spent, err)
	}
	if s := b.Stats(); s.Refused != 100 || s.SoftAlerts != 1 {
		t.Errorf("stats = %+v; want 100 refused, 1 soft alert", s)
	}
}

// VendorTool returns a registry tool of vendor with an open input schema.
func VendorTool(t testing.TB, vendor, name string) *registry.Tool {
	t.Helper()
	tool, err := registry.NewTool(vendor, registry.ToolDef{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}
