package billing_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/billing"
)

func mergePair() (billing.Event, billing.Event) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	call := billing.Event{Key: "c1/call", CallID: "c1", Kind: billing.KindCall, Time: at, Ingested: at.Add(time.Second),
		Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Capability: "image.generate", Outcome: billing.OutcomeOK,
		Latency: 120 * time.Millisecond, Units: billing.Units{billing.UnitCalls: 1, billing.UnitImages: 2},
		TenantUnitPrice: 20000, TenantCost: 100000, Currency: "USD", PriceVersion: "2026-11"}
	att := call
	att.Key, att.Kind, att.Attempt, att.Latency = "c1/1", billing.KindAttempt, 1, 90*time.Millisecond
	att.Units = billing.Units{billing.UnitCalls: 1, billing.UnitImages: 2}
	att.TenantUnitPrice, att.TenantCost, att.VendorUnitPrice, att.VendorCost = 0, 0, 10000, 30000
	return call, att
}

// TestMergeAttemptSplitsBack: a call and its one attempt become one event
// that splits back into exactly the two.
func TestMergeAttemptSplitsBack(t *testing.T) {
	call, att := mergePair()
	m, ok := billing.MergeAttempt(&call, &att)
	if !ok || !m.Merged() {
		t.Fatalf("MergeAttempt = %+v, %v; want a merged event", m, ok)
	}
	c, a, ok := m.Split()
	if !ok {
		t.Fatal("Split: not merged")
	}
	if diff := cmp.Diff([]billing.Event{call, att}, []billing.Event{c, a}); diff != "" {
		t.Errorf("Split (-want +got):\n%s", diff)
	}
	if _, _, ok := call.Split(); ok {
		t.Error("a plain call event splits")
	}
}

// TestMergeAttemptRefusesWhatItCannotSplit: a pair that differs in
// anything but the attempt's latency and payout stays two events.
func TestMergeAttemptRefusesWhatItCannotSplit(t *testing.T) {
	for name, change := range map[string]func(c, a *billing.Event){
		"other vendor":       func(c, a *billing.Event) { a.Vendor = "sd" },
		"attempt failed":     func(c, a *billing.Event) { a.Outcome, a.Reason = billing.OutcomeError, "unavailable: down" },
		"other units":        func(c, a *billing.Event) { a.Units = billing.Units{billing.UnitCalls: 1} },
		"other currency":     func(c, a *billing.Event) { a.Currency = "EUR" },
		"second attempt":     func(c, a *billing.Event) { a.Attempt, a.Key = 2, "c1/2" },
		"job run key":        func(c, a *billing.Event) { a.Key = "c1/run-2/1" },
		"payout on the call": func(c, a *billing.Event) { c.VendorCost = 1 },
		"other ingest time":  func(c, a *billing.Event) { a.Ingested = a.Ingested.Add(time.Microsecond) },
	} {
		call, att := mergePair()
		change(&call, &att)
		if m, ok := billing.MergeAttempt(&call, &att); ok {
			t.Errorf("%s: merged into %+v", name, m)
		}
	}
}
