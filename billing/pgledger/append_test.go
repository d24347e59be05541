package pgledger_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
)

// TestAppendBatches covers batches of several INSERTs in which new and
// stored keys mix in every way: each batch's new events must be stored
// and rolled up once, the rest counted as duplicates.
func TestAppendBatches(t *testing.T) {
	synth := func(from, to int) []billing.Event {
		var evs []billing.Event
		for i := from; i < to; i++ {
			evs = append(evs, ledgertest.Synthetic(i))
		}
		return evs
	}
	cat := func(parts ...[]billing.Event) []billing.Event {
		var evs []billing.Event
		for _, p := range parts {
			evs = append(evs, p...)
		}
		return evs
	}
	for _, tt := range []struct {
		name    string
		batches [][]billing.Event
		stored  []billing.Event // what the ledger holds at the end
		dups    int64
	}{
		{"new", [][]billing.Event{synth(0, 1000)}, synth(0, 1000), 0},
		{"replay", [][]billing.Event{synth(0, 1000), synth(0, 1000)}, synth(0, 1000), 1000},
		{"stored then new", [][]billing.Event{synth(0, 600), synth(0, 1300)}, synth(0, 1300), 600},
		{"new then stored", [][]billing.Event{synth(700, 1300), synth(0, 1300)}, synth(0, 1300), 600},
		{"stored inside new", [][]billing.Event{synth(300, 301), synth(0, 999)}, synth(0, 999), 1},
		{"key twice, chunks apart", [][]billing.Event{cat(synth(0, 700), synth(3, 4))}, synth(0, 700), 1},
		{"key twice, all stored", [][]billing.Event{synth(0, 700), cat(synth(0, 700), synth(0, 700))}, synth(0, 700), 1400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := open(t, newSchema(t))
			for _, b := range tt.batches {
				if err := l.Append(t.Context(), b); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := l.Stats(), (billing.LedgerStats{Appended: int64(len(tt.stored)), Duplicates: tt.dups}); got != want {
				t.Errorf("Stats = %+v, want %+v", got, want)
			}
			n := 0
			if err := l.Query(t.Context(), billing.Filter{}, func(billing.Event) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			if n != len(tt.stored) {
				t.Errorf("Query: %d events, want %d", n, len(tt.stored))
			}
			// The hourly rollups (whole-hour query) must match a scan of
			// the events (a query starting off the hour), group by group.
			q := billing.RollupQuery{GroupBy: []string{"tenant", "vendor", "tool", "hour"}}
			hours, err := l.Rollup(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			q.From = ledgertest.Base.Add(-time.Microsecond)
			scan, err := l.Rollup(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(scan, hours); diff != "" {
				t.Errorf("rollups (-event scan +hourly table):\n%s", diff)
			}
			var sum billing.Row
			for _, r := range hours {
				sum.Calls += r.Calls
				sum.Attempts += r.Attempts
				sum.Paid += r.Paid
				sum.Tokens += r.Tokens
				sum.TenantCost += r.TenantCost
				sum.VendorCost += r.VendorCost
			}
			want := ledgertest.Totals(tt.stored)
			if sum.Calls != want.Calls || sum.Attempts != want.Attempts || sum.Paid != want.Paid || sum.Tokens != want.Tokens ||
				sum.TenantCost != want.TenantCost || sum.VendorCost != want.VendorCost {
				t.Errorf("rollup totals = %+v, want %+v", sum, want)
			}
		})
	}
}
