package ledgersql

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/toolhub/toolhub/billing"
)

// Both ledgers keep an hourly rollup table next to the events, updated in
// the same transaction as each Append with the events that were new (never
// the duplicates), so monthly reports read a few thousand rows instead of
// scanning millions of events.

// RollupTableColumns in insert order.
const RollupTableColumns = `hour_us, month_us, tenant, vendor, tool, currency, calls, rejected, failed, cached, attempts, paid, images, tokens, seconds, tenant_cost, vendor_cost`

// NumRollupColumns is the number of RollupTableColumns.
const NumRollupColumns = 17

// RollupUpdate is the ON CONFLICT clause adding new sums to a stored row.
const RollupUpdate = ` ON CONFLICT (hour_us, tenant, vendor, tool, currency) DO UPDATE SET
	calls = %[1]s.calls + excluded.calls, rejected = %[1]s.rejected + excluded.rejected,
	failed = %[1]s.failed + excluded.failed, cached = %[1]s.cached + excluded.cached,
	attempts = %[1]s.attempts + excluded.attempts, paid = %[1]s.paid + excluded.paid,
	images = %[1]s.images + excluded.images, tokens = %[1]s.tokens + excluded.tokens,
	seconds = %[1]s.seconds + excluded.seconds, tenant_cost = %[1]s.tenant_cost + excluded.tenant_cost,
	vendor_cost = %[1]s.vendor_cost + excluded.vendor_cost`

// HourRow is one row of the hourly rollup table.
type HourRow struct {
	Hour, Month int64 // µs
	billing.Row
}

// Values returns the row's values in RollupTableColumns order.
func (h *HourRow) Values() []any { return h.AppendValues(make([]any, 0, NumRollupColumns)) }

// AppendValues appends the row's values in RollupTableColumns order to args.
func (h *HourRow) AppendValues(args []any) []any {
	r := &h.Row
	return append(args, h.Hour, h.Month, r.Tenant, r.Vendor, r.Tool, r.Currency, r.Calls, r.Rejected, r.Failed, r.Cached,
		r.Attempts, r.Paid, r.Images, r.Tokens, r.Seconds, int64(r.TenantCost), int64(r.VendorCost))
}

// Add counts ev into r, the way reports count (see billing.Row).
func Add(r *billing.Row, ev *billing.Event) {
	r.TenantCost += ev.TenantCost
	r.VendorCost += ev.VendorCost
	switch ev.Kind {
	case billing.KindCall:
		r.Calls++
		switch ev.Outcome {
		case billing.OutcomeRejected:
			r.Rejected++
		case billing.OutcomeError, billing.OutcomeTimeout:
			r.Failed++
		case billing.OutcomeCached, billing.OutcomeStale:
			r.Cached++
		}
		if ev.Merged() { // and its attempt, with the call's outcome
			r.Attempts++
			if ev.Outcome == billing.OutcomeOK {
				r.Paid++
			}
		}
	case billing.KindAttempt:
		r.Attempts++
		if ev.Outcome == billing.OutcomeOK {
			r.Paid++
		}
	}
	if ev.Kind != billing.KindAttempt {
		r.Images += ev.Units[billing.UnitImages]
		r.Tokens += ev.Units[billing.UnitTokens]
		r.Seconds += ev.Units[billing.UnitSeconds]
	}
}

// Aggregate sums the events whose keys are in inserted into hourly rows,
// sorted by key (so concurrent writers lock rows in one order). A nil
// inserted means every event was inserted (the caller knows their keys are
// distinct).
func Aggregate(evs []billing.Event, inserted map[string]bool) []HourRow {
	type k struct {
		hour                           int64
		tenant, vendor, tool, currency string
	}
	m := map[k]*HourRow{}
	for i := range evs {
		ev := &evs[i]
		if inserted != nil && !inserted[ev.Key] {
			continue
		}
		us := ev.Time.UnixMicro()
		key := k{us - mod(us, 3_600_000_000), ev.Tenant, ev.Vendor, ev.Tool, ev.Currency}
		h := m[key]
		if h == nil {
			h = &HourRow{Hour: key.hour, Month: MonthStart(ev.Time), Row: billing.Row{Tenant: ev.Tenant, Vendor: ev.Vendor, Tool: ev.Tool, Currency: ev.Currency}}
			m[key] = h
		}
		if inserted != nil {
			inserted[ev.Key] = false // a key twice in one batch was inserted once
		}
		Add(&h.Row, ev)
	}
	out := make([]HourRow, 0, len(m))
	for _, h := range m {
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b HourRow) int {
		if a.Hour != b.Hour {
			return int(min(max(a.Hour-b.Hour, -1), 1))
		}
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Vendor, b.Vendor),
			strings.Compare(a.Tool, b.Tool), strings.Compare(a.Currency, b.Currency))
	})
	return out
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// RollupOf is the query for Ledger.Rollup: on the hourly table hours when
// the filter allows (UsesRollups), else on the table of events.
func (d Dialect) RollupOf(events, hours string, q billing.RollupQuery) (string, []any) {
	if UsesRollups(q.Filter) {
		return d.RollupFromHours(hours, q)
	}
	return d.Rollup(events, q)
}

// UsesRollups reports whether q can be answered from the hourly rollup
// table: no kind filter, and from/to on whole hours.
func UsesRollups(q billing.Filter) bool {
	aligned := func(t time.Time) bool { return t.IsZero() || mod(t.UnixMicro(), 3_600_000_000) == 0 }
	return q.Kind == "" && aligned(q.From) && aligned(q.To)
}

// RollupFromHours is the query for Ledger.Rollup on the hourly table; read
// its rows with ReadRows.
func (d Dialect) RollupFromHours(table string, q billing.RollupQuery) (string, []any) {
	f := q.Filter
	f.Kind = "" // the hourly table has no kind (UsesRollups)
	where, args := d.where("hour_us", f)
	var sums []string
	for _, c := range []string{"calls", "rejected", "failed", "cached", "attempts", "paid", "images", "tokens", "seconds", "tenant_cost", "vendor_cost"} {
		sums = append(sums, "CAST(SUM("+c+") AS BIGINT)")
	}
	return groupedSelect(table, where, rollupDims(q, "hour_us", "(hour_us / 86400000000) * 86400000000"), strings.Join(sums, ", ")), args
}
