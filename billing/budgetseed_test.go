package billing_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/sqlledger"
)

func TestBudgetsSeedFromTheLedger(t *testing.T) {
	ctx := t.Context()
	l, err := sqlledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	at := time.Date(2026, 12, 15, 10, 0, 0, 0, time.UTC)
	n := 0
	ev := func(kind billing.Kind, tenant, vendor string, when time.Time, cost billing.Micros) billing.Event {
		n++
		id := "c" + time.Duration(n).String()
		key := billing.CallKey(id)
		if kind == billing.KindAttempt {
			key = billing.AttemptKey(id, 1)
		}
		return billing.Event{Key: key, CallID: id, Kind: kind, Time: when, Tenant: tenant, Vendor: vendor, Tool: "t",
			Outcome: billing.OutcomeOK, TenantCost: cost, VendorCost: cost / 2, Currency: "USD"}
	}
	today, earlier, lastMonth := at.Add(-time.Hour), at.AddDate(0, 0, -10), at.AddDate(0, -1, 0)
	if err := l.Append(ctx, []billing.Event{
		ev(billing.KindCall, "acme", "weather-a", today, 500_000),
		ev(billing.KindCall, "acme", "weather-a", earlier, 1_000_000),
		ev(billing.KindCall, "acme", "maps", today, 250_000),
		ev(billing.KindCall, "globex", "weather-a", today, 2_000_000),
		ev(billing.KindCall, "acme", "weather-a", lastMonth, 5_000_000),
		ev(billing.KindAttempt, "acme", "weather-a", today, 0),
	}); err != nil {
		t.Fatal(err)
	}
	b, err := billing.NewBudgets([]billing.BudgetRule{
		{Tenant: "acme", Period: billing.PeriodDay, Limit: 10_000_000},
		{Tenant: "*", Vendor: "weather-a", Period: billing.PeriodMonth, Limit: 10_000_000},
	}, &billing.BudgetOptions{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	check := func(tenant, vendor, period string, want billing.Micros) {
		t.Helper()
		got, err := b.Spent(ctx, tenant, vendor, period, at)
		if err != nil || got != want {
			t.Errorf("%s %s %s: spent %v (%v), want %v", tenant, vendor, period, got, err, want)
		}
	}
	for range 2 { // seeding twice counts once
		if err := b.Seed(ctx, l, at); err != nil {
			t.Fatal(err)
		}
		check("acme", "", billing.PeriodDay, 750_000)
		check("acme", "weather-a", billing.PeriodMonth, 1_500_000)
		check("globex", "weather-a", billing.PeriodMonth, 2_000_000)
		check("globex", "", billing.PeriodDay, 0) // no rule
	}
	// A rule added later (a reload) is seeded; the others keep their count.
	if err := b.SetRules([]billing.BudgetRule{
		{Tenant: "acme", Period: billing.PeriodDay, Limit: 10_000_000},
		{Tenant: "acme", Vendor: "maps", Period: billing.PeriodMonth, Limit: 10_000_000},
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Seed(ctx, l, at); err != nil {
		t.Fatal(err)
	}
	check("acme", "maps", billing.PeriodMonth, 250_000)
	check("acme", "", billing.PeriodDay, 750_000)
	if err := b.SetRules([]billing.BudgetRule{{Tenant: "acme", Period: "week"}}); err == nil {
		t.Error("SetRules took a rule with period week")
	}
}
