// Package ledgertest is the contract every [billing.Ledger] passes, and a
// fixed set of events for tests and golden reports.
//
//	func TestContract(t *testing.T) {
//		ledgertest.Run(t, func(t *testing.T) billing.Ledger { return open(t) })
//	}
package ledgertest

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/billing"
)

// Base is the time the fixture starts at: 2026-11-30 22:00 UTC, so its
// events cross an hour, a day and a month boundary.
var Base = time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)

// Fixture returns a fixed set of events: 3 tenants, 2 vendors, ok,
// fallback, cached, rejected and error calls, their attempts, one
// adjustment, and one EUR-priced call, over 2026-11-30 22:00 → 2026-12-02.
func Fixture() []billing.Event {
	var evs []billing.Event
	tenants := []string{"acme", "globex", "initech"}
	for i := range 60 {
		id := fmt.Sprintf("call-%03d", i)
		at := Base.Add(time.Duration(i) * 47 * time.Minute)
		tenant := tenants[i%3]
		vendor, tool := "doubao", "generate_image"
		if i%4 == 1 {
			vendor, tool = "weather-a", "current_weather"
		}
		call := billing.Event{
			Key: billing.CallKey(id), CallID: id, Kind: billing.KindCall, Time: at, Ingested: at.Add(time.Second),
			Tenant: tenant, Vendor: vendor, Tool: tool, Outcome: billing.OutcomeOK,
			Latency: time.Duration(100+i) * time.Millisecond, Units: billing.Units{billing.UnitCalls: 1},
			Currency: "USD", PriceVersion: "2026-11",
		}
		if vendor == "doubao" {
			call.Capability = "image.generate"
			call.Units[billing.UnitImages] = int64(1 + i%3)
		}
		var attempts []billing.Event
		attempt := func(vendor, tool string, outcome billing.Outcome, cost billing.Micros) {
			n := len(attempts) + 1
			attempts = append(attempts, billing.Event{
				Key: billing.AttemptKey(id, n), CallID: id, Kind: billing.KindAttempt, Attempt: n, Time: at, Ingested: at.Add(time.Second),
				Tenant: tenant, Vendor: vendor, Tool: tool, Capability: call.Capability, Outcome: outcome,
				Latency: 90 * time.Millisecond, Units: billing.Units{billing.UnitCalls: 1}, VendorUnitPrice: cost, VendorCost: cost,
				Currency: "USD", PriceVersion: "2026-11",
			})
		}
		switch {
		case i%10 == 3: // cached: no attempt, cache price
			call.Outcome, call.TenantUnitPrice, call.TenantCost = billing.OutcomeCached, 100, 100
			delete(call.Units, billing.UnitImages)
		case i%10 == 7: // rejected by budget
			call.Outcome, call.Reason = billing.OutcomeRejected, "budget_exceeded: tenant "+tenant+" month budget"
			delete(call.Units, billing.UnitImages)
		case i%10 == 9: // every vendor failed
			call.Outcome, call.Reason = billing.OutcomeError, "unavailable: vendor down"
			delete(call.Units, billing.UnitImages)
			attempt(vendor, tool, billing.OutcomeTimeout, 0)
		case i%5 == 0 && vendor == "doubao": // primary failed, secondary answered
			call.Outcome, call.Vendor, call.Tool = billing.OutcomeFallback, "sd", "txt2img"
			attempt("doubao", "generate_image", billing.OutcomeError, 0)
			attempt("sd", "txt2img", billing.OutcomeOK, 5000)
			call.TenantUnitPrice, call.TenantCost = 20000, 20000+40000*billing.Micros(call.Units[billing.UnitImages])
		default:
			c := billing.Micros(1000)
			if vendor == "doubao" {
				c = 10000
				call.TenantUnitPrice, call.TenantCost = 20000, 20000+40000*billing.Micros(call.Units[billing.UnitImages])
			} else {
				call.TenantUnitPrice, call.TenantCost = 2500, 2500
			}
			attempt(vendor, tool, billing.OutcomeOK, c)
		}
		evs = append(evs, call)
		evs = append(evs, attempts...)
	}
	// A correction: call-004 was overcharged by 0.01.
	evs = append(evs, billing.Event{
		Key: "adjust/call-004/1", CallID: "call-004", Kind: billing.KindAdjust, Time: Base.Add(30 * time.Hour),
		Ingested: Base.Add(30 * time.Hour), Tenant: "globex", Vendor: "doubao", Tool: "generate_image",
		Outcome: billing.OutcomeOK, Reason: "overcharged: duplicate image", Units: billing.Units{},
		TenantCost: -10000, Currency: "USD", PriceVersion: "2026-11", Adjusts: billing.CallKey("call-004"),
	})
	// One call priced in EUR.
	evs = append(evs, billing.Event{
		Key: "call-eur/call", CallID: "call-eur", Kind: billing.KindCall, Time: Base.Add(3 * time.Hour),
		Ingested: Base.Add(3 * time.Hour), Tenant: "acme", Vendor: "maps-eu", Tool: "route",
		Outcome: billing.OutcomeOK, Units: billing.Units{billing.UnitCalls: 1}, TenantUnitPrice: 3000, TenantCost: 3000,
		Currency: "EUR", PriceVersion: "2026-11",
	})
	return evs
}

// MeterFixture is Fixture with each answering attempt carrying its call's
// units, as the meter records them, so that [Merge] merges most
// single-attempt calls.
func MeterFixture() []billing.Event {
	evs := Fixture()
	for i := 0; i+1 < len(evs); i++ {
		if c, a := &evs[i], &evs[i+1]; c.Kind == billing.KindCall && a.Kind == billing.KindAttempt && a.Vendor == c.Vendor && a.Outcome == c.Outcome {
			a.Units = maps.Clone(c.Units)
		}
	}
	return evs
}

// Merge returns evs with each call event and its first attempt that
// [billing.MergeAttempt] merges, next to each other, as one merged event:
// what the meter records for a single-attempt call.
func Merge(evs []billing.Event) []billing.Event {
	var out []billing.Event
	for i := 0; i < len(evs); i++ {
		if i+1 < len(evs) {
			if m, ok := billing.MergeAttempt(&evs[i], &evs[i+1]); ok {
				out = append(out, m)
				i++
				continue
			}
		}
		out = append(out, evs[i])
	}
	return out
}

// Split returns evs with each merged event replaced by the call and the
// attempt it stands for.
func Split(evs []billing.Event) []billing.Event {
	var out []billing.Event
	for _, e := range evs {
		if c, a, ok := e.Split(); ok {
			out = append(out, c, a)
			continue
		}
		out = append(out, e)
	}
	return out
}

// Same checks that got reads as want does: the same events from Query
// (all, by kind, by vendor) and the same rollups, from the hourly table
// and from a scan of the events, for several groupings and filters.
func Same(t *testing.T, want, got billing.Ledger) {
	t.Helper()
	ctx := context.Background()
	query := func(l billing.Ledger, f billing.Filter) []billing.Event {
		var evs []billing.Event
		if err := l.Query(ctx, f, func(e billing.Event) error { evs = append(evs, e); return nil }); err != nil {
			t.Fatal(err)
		}
		return evs
	}
	filters := []billing.Filter{{}, {Kind: billing.KindCall}, {Kind: billing.KindAttempt}, {Kind: billing.KindAdjust},
		{Vendor: "sd", Kind: billing.KindAttempt}, {Tenant: "acme"}, {From: Base.Add(3 * time.Hour), To: Base.Add(20 * time.Hour)}}
	for _, f := range filters {
		if diff := cmp.Diff(query(want, f), query(got, f)); diff != "" {
			t.Errorf("Query %+v (-want +got):\n%s", f, diff)
		}
	}
	from, to := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	for _, g := range [][]string{nil, {"tenant"}, {"tenant", "vendor", "tool", "hour"}, {"day", "vendor"}, {"month", "tenant", "tool"}} {
		for _, f := range filters {
			for _, hourly := range []bool{true, false} {
				if hourly && f.From.IsZero() {
					f.From, f.To = from, to
				} else if !hourly {
					f.From = from.Add(-time.Microsecond)
				}
				q := billing.RollupQuery{Filter: f, GroupBy: g}
				w, err := want.Rollup(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				r, err := got.Rollup(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(w, r); diff != "" {
					t.Errorf("Rollup %+v (-want +got):\n%s", q, diff)
				}
			}
		}
	}
}

// Totals sums events the way a rollup does, for checking ledgers.
func Totals(evs []billing.Event) billing.Row {
	var r billing.Row
	for _, e := range Split(evs) {
		r.TenantCost += e.TenantCost
		r.VendorCost += e.VendorCost
		switch e.Kind {
		case billing.KindCall:
			r.Calls++
			switch e.Outcome {
			case billing.OutcomeRejected:
				r.Rejected++
			case billing.OutcomeError, billing.OutcomeTimeout:
				r.Failed++
			case billing.OutcomeCached, billing.OutcomeStale:
				r.Cached++
			}
		case billing.KindAttempt:
			r.Attempts++
			if e.Outcome == billing.OutcomeOK {
				r.Paid++
			}
		}
		if e.Kind != billing.KindAttempt {
			r.Images += e.Units[billing.UnitImages]
			r.Tokens += e.Units[billing.UnitTokens]
			r.Seconds += e.Units[billing.UnitSeconds]
		}
	}
	return r
}

// Run runs the contract against ledgers made by open (a fresh, empty
// ledger each time, closed by the test's cleanup).
func Run(t *testing.T, open func(t *testing.T) billing.Ledger) {
	ctx := context.Background()
	t.Run("RoundTrip", func(t *testing.T) {
		l := open(t)
		evs := Fixture()
		if err := l.Append(ctx, evs); err != nil {
			t.Fatal(err)
		}
		var got []billing.Event
		if err := l.Query(ctx, billing.Filter{}, func(e billing.Event) error { got = append(got, e); return nil }); err != nil {
			t.Fatal(err)
		}
		want := sorted(evs)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Query (-want +got):\n%s", diff)
		}
		if s := l.Stats(); s.Appended != int64(len(evs)) || s.Duplicates != 0 {
			t.Errorf("Stats = %+v, want %d appended, 0 duplicates", s, len(evs))
		}
	})
	t.Run("DuplicatesIgnoredAndCounted", func(t *testing.T) {
		l := open(t)
		evs := Fixture()
		if err := l.Append(ctx, evs[:10]); err != nil {
			t.Fatal(err)
		}
		// Replay everything, with a duplicate inside the batch too, and a
		// "changed" copy of a stored event (the first write wins).
		replay := append([]billing.Event{}, evs...)
		replay = append(replay, evs[20])
		replay[0].TenantCost = 999999
		if err := l.Append(ctx, replay); err != nil {
			t.Fatal(err)
		}
		if err := l.Append(ctx, evs); err != nil {
			t.Fatal(err)
		}
		if s := l.Stats(); s.Appended != int64(len(evs)) || s.Duplicates != int64(10+1+len(evs)) {
			t.Errorf("Stats = %+v, want %d appended, %d duplicates", s, len(evs), 10+1+len(evs))
		}
		rows, err := l.Rollup(ctx, billing.RollupQuery{})
		if err != nil {
			t.Fatal(err)
		}
		checkTotals(t, rows, evs)
	})
	t.Run("RollupTotalsAgreeAcrossGroupings", func(t *testing.T) {
		l := open(t)
		evs := Fixture()
		if err := l.Append(ctx, evs); err != nil {
			t.Fatal(err)
		}
		for _, g := range [][]string{nil, {"tenant"}, {"vendor"}, {"tool"}, {"hour"}, {"day"}, {"month"}, {"tenant", "vendor", "tool", "day"}, {"month", "vendor"}} {
			rows, err := l.Rollup(ctx, billing.RollupQuery{GroupBy: g})
			if err != nil {
				t.Fatalf("group by %v: %v", g, err)
			}
			t.Logf("group by %v: %d rows", g, len(rows))
			checkTotals(t, rows, evs)
		}
	})
	t.Run("RollupPeriodsAndFilters", func(t *testing.T) {
		l := open(t)
		evs := Fixture()
		if err := l.Append(ctx, evs); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name   string
			q      billing.RollupQuery
			filter func(billing.Event) bool
		}{
			{"december", billing.RollupQuery{Filter: billing.Filter{From: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}},
				func(e billing.Event) bool { return !e.Time.Before(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) }},
			{"acme", billing.RollupQuery{Filter: billing.Filter{Tenant: "acme"}}, func(e billing.Event) bool { return e.Tenant == "acme" }},
			{"sd attempts", billing.RollupQuery{Filter: billing.Filter{Vendor: "sd", Kind: billing.KindAttempt}},
				func(e billing.Event) bool { return e.Vendor == "sd" && e.Kind == billing.KindAttempt }},
		} {
			t.Run(tt.name, func(t *testing.T) {
				rows, err := l.Rollup(ctx, tt.q)
				if err != nil {
					t.Fatal(err)
				}
				var want []billing.Event
				for _, e := range evs {
					if tt.filter(e) {
						want = append(want, e)
					}
				}
				checkTotals(t, rows, want)
			})
		}
		rows, err := l.Rollup(ctx, billing.RollupQuery{GroupBy: []string{"month"}})
		if err != nil {
			t.Fatal(err)
		}
		var months []time.Time
		for _, r := range rows {
			months = append(months, r.Period)
		}
		wantMonths := []time.Time{time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
		if diff := cmp.Diff(wantMonths, months); diff != "" {
			t.Errorf("months (one row per currency) (-want +got):\n%s", diff)
		}
		rows, err = l.Rollup(ctx, billing.RollupQuery{GroupBy: []string{"hour"}, Filter: billing.Filter{From: Base, To: Base.Add(2 * time.Hour)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || !rows[0].Period.Equal(Base) || !rows[1].Period.Equal(Base.Add(time.Hour)) {
			t.Errorf("hours = %+v, want 22:00 and 23:00", rows)
		}
	})
	t.Run("HourlyRollupsMatchEventScan", func(t *testing.T) {
		// Whole-hour ranges are answered from the hourly rollup table; a
		// range off by a microsecond scans the events. Both must agree,
		// also after duplicate appends in several batches.
		l := open(t)
		evs := Fixture()
		for i := 0; i < len(evs); i += 7 {
			if err := l.Append(ctx, evs[i:min(i+7, len(evs))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Append(ctx, evs); err != nil {
			t.Fatal(err)
		}
		from, to := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
		for _, g := range [][]string{nil, {"tenant"}, {"tenant", "vendor", "tool", "hour"}, {"day", "vendor"}, {"month", "tenant", "tool"}} {
			for _, f := range []billing.Filter{{}, {Tenant: "acme"}, {Vendor: "doubao"}} {
				f.From, f.To = from, to
				hourly, err := l.Rollup(ctx, billing.RollupQuery{Filter: f, GroupBy: g})
				if err != nil {
					t.Fatal(err)
				}
				f.From = from.Add(-time.Microsecond)
				scanned, err := l.Rollup(ctx, billing.RollupQuery{Filter: f, GroupBy: g})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(scanned, hourly); diff != "" {
					t.Errorf("group by %v, filter %+v (-scan +hourly):\n%s", g, f, diff)
				}
				if len(hourly) == 0 {
					t.Errorf("group by %v, filter %+v: no rows", g, f)
				}
			}
		}
	})
	t.Run("RollupRefusesBadGrouping", func(t *testing.T) {
		l := open(t)
		for _, g := range [][]string{{"week"}, {"day", "month"}, {"tenant", "tenant"}} {
			if _, err := l.Rollup(ctx, billing.RollupQuery{GroupBy: g}); err == nil {
				t.Errorf("group by %v: no error", g)
			}
		}
	})
	t.Run("EmptyAppend", func(t *testing.T) {
		l := open(t)
		if err := l.Append(ctx, nil); err != nil {
			t.Fatal(err)
		}
		rows, err := l.Rollup(ctx, billing.RollupQuery{GroupBy: []string{"tenant"}})
		if err != nil || len(rows) != 0 {
			t.Errorf("Rollup of an empty ledger = %v, %v; want no rows", rows, err)
		}
	})
	t.Run("AppendBatches", func(t *testing.T) { appendBatches(t, open) })
	t.Run("MergedRows", func(t *testing.T) {
		// A single-attempt call stored as one row reads as its two events.
		ref, l := open(t), open(t)
		evs := MeterFixture()
		merged := Merge(evs)
		if len(merged) >= len(evs)-20 {
			t.Fatalf("Merge: %d events of %d, want most single-attempt calls merged", len(merged), len(evs))
		}
		if err := ref.Append(ctx, evs); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(merged); i += 11 { // several batches, replayed
			if err := l.Append(ctx, merged[i:min(i+11, len(merged))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Append(ctx, merged); err != nil {
			t.Fatal(err)
		}
		if s := l.Stats(); s.Appended != int64(len(merged)) || s.Duplicates != int64(len(merged)) {
			t.Errorf("Stats = %+v, want %d appended and as many duplicates", s, len(merged))
		}
		Same(t, ref, l)
	})
}

func sorted(evs []billing.Event) []billing.Event {
	out := append([]billing.Event{}, evs...)
	for i := range out {
		out[i].Time, out[i].Ingested = out[i].Time.UTC(), out[i].Ingested.UTC()
	}
	// by time then key
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && less(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func less(a, b billing.Event) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	return a.Key < b.Key
}

// checkTotals compares the sum of rows, per currency, with evs.
func checkTotals(t *testing.T, rows []billing.Row, evs []billing.Event) {
	t.Helper()
	got := map[string]billing.Row{}
	for _, r := range rows {
		s := got[r.Currency]
		s.Currency = r.Currency
		s.Calls += r.Calls
		s.Rejected += r.Rejected
		s.Failed += r.Failed
		s.Cached += r.Cached
		s.Attempts += r.Attempts
		s.Paid += r.Paid
		s.Images += r.Images
		s.Tokens += r.Tokens
		s.Seconds += r.Seconds
		s.TenantCost += r.TenantCost
		s.VendorCost += r.VendorCost
		got[r.Currency] = s
	}
	byCur := map[string][]billing.Event{}
	for _, e := range evs {
		byCur[e.Currency] = append(byCur[e.Currency], e)
	}
	want := map[string]billing.Row{}
	for c, es := range byCur {
		r := Totals(es)
		r.Currency = c
		want[c] = r
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
}

// appendBatches covers batches of several INSERTs in which new and
// stored keys mix in every way: each batch's new events must be stored
// and rolled up once, the rest counted as duplicates.
func appendBatches(t *testing.T, open func(t *testing.T) billing.Ledger) {
	synth := func(from, to int) []billing.Event {
		var evs []billing.Event
		for i := from; i < to; i++ {
			evs = append(evs, Synthetic(i))
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
			l := open(t)
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
			q.From = Base.Add(-time.Microsecond)
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
			want := Totals(tt.stored)
			if sum.Calls != want.Calls || sum.Attempts != want.Attempts || sum.Paid != want.Paid || sum.Tokens != want.Tokens ||
				sum.TenantCost != want.TenantCost || sum.VendorCost != want.VendorCost {
				t.Errorf("rollup totals = %+v, want %+v", sum, want)
			}
		})
	}
}
