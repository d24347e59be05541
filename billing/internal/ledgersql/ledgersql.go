// Package ledgersql is the SQL the SQLite and PostgreSQL ledgers share:
// column list, filters, rollups and row scanning. Times are stored as
// int64 microseconds since the Unix epoch (UTC) in both, so periods are
// computed the same way and rollups agree to the micro-unit.
package ledgersql

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolhub/toolhub/billing"
)

// Columns in insert and select order.
const Columns = `key, call_id, kind, attempt, time_us, ingested_us, tenant, vendor, tool, capability, outcome, reason, latency_ns, units, images, tokens, seconds, tenant_unit_price, tenant_cost, vendor_unit_price, vendor_cost, currency, price_version, adjusts, month_us, attempt_latency_ns`

// NumColumns is the number of Columns.
const NumColumns = 26

// merged is true on a row holding a merged event (a call and its first
// attempt, see billing.MergeAttempt).
const merged = `(kind = 'call' AND attempt = 1)`

// An INSERT of many rows binds a value per column and row, and binding is
// most of what an INSERT costs the embedded ledger (the driver copies each
// string into C memory and back out). The columns most rows of a batch
// have in common — what a call's outcome is rather than who made it — go
// first in InsertColumns: a statement for rows that agree on them (see
// SameShared) binds them once (?1 … ?NumShared) for all its rows.

// sharedColumns are the columns a chunk of rows often has in common.
var sharedColumns = []string{"kind", "attempt", "outcome", "reason", "units", "currency", "price_version", "adjusts"}

// NumShared is the number of shared columns, NumRow of the others.
const (
	NumShared = 8
	NumRow    = NumColumns - NumShared
)

// InsertColumns is Columns with the shared columns first: the order of
// AppendShared's values, then AppendRow's.
var InsertColumns = func() string {
	cols := slices.Clone(sharedColumns)
	for _, c := range strings.Split(Columns, ", ") {
		if !slices.Contains(sharedColumns, c) {
			cols = append(cols, c)
		}
	}
	return strings.Join(cols, ", ")
}()

// AppendShared appends ev's shared column values (InsertColumns order).
func AppendShared(args []any, ev *billing.Event) []any {
	return append(args, string(ev.Kind), int64(ev.Attempt), string(ev.Outcome), ev.Reason, UnitsColumn(ev.Units),
		ev.Currency, ev.PriceVersion, ev.Adjusts)
}

// AppendRow appends ev's other column values (InsertColumns order).
func AppendRow(args []any, ev *billing.Event) []any {
	return append(args, ev.Key, ev.CallID, ev.Time.UnixMicro(), ev.Ingested.UnixMicro(),
		ev.Tenant, ev.Vendor, ev.Tool, ev.Capability, int64(ev.Latency),
		ev.Units[billing.UnitImages], ev.Units[billing.UnitTokens], ev.Units[billing.UnitSeconds],
		int64(ev.TenantUnitPrice), int64(ev.TenantCost), int64(ev.VendorUnitPrice), int64(ev.VendorCost),
		MonthStart(ev.Time), int64(ev.AttemptLatency))
}

// SameShared reports whether a and b have the same shared column values
// (with units the columns imply, see UnitsColumn).
func SameShared(a, b *billing.Event) bool {
	return a.Kind == b.Kind && a.Attempt == b.Attempt && a.Outcome == b.Outcome && a.Reason == b.Reason &&
		a.Currency == b.Currency && a.PriceVersion == b.PriceVersion && a.Adjusts == b.Adjusts &&
		impliedUnits(a.Units) && impliedUnits(b.Units)
}

// UnitsColumn is the units column's value: "" when the units are one call
// and the non-zero images, tokens and seconds, which their own columns
// hold (the common case: Scan rebuilds them), else their JSON (UnitsJSON).
func UnitsColumn(u billing.Units) string {
	if impliedUnits(u) {
		return ""
	}
	return UnitsJSON(u)
}

// impliedUnits reports whether u is {calls: 1} with non-zero images,
// tokens or seconds and nothing else.
func impliedUnits(u billing.Units) bool {
	if u[billing.UnitCalls] != 1 {
		return false
	}
	for k, v := range u {
		switch k {
		case billing.UnitCalls:
		case billing.UnitImages, billing.UnitTokens, billing.UnitSeconds:
			if v == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Values returns ev's column values in Columns order.
func Values(ev *billing.Event) []any { return AppendValues(make([]any, 0, NumColumns), ev) }

// AppendValues appends ev's column values in Columns order to args.
func AppendValues(args []any, ev *billing.Event) []any {
	return append(args, ev.Key, ev.CallID, string(ev.Kind), int64(ev.Attempt), ev.Time.UnixMicro(), ev.Ingested.UnixMicro(),
		ev.Tenant, ev.Vendor, ev.Tool, ev.Capability, string(ev.Outcome), ev.Reason, int64(ev.Latency), UnitsColumn(ev.Units),
		ev.Units[billing.UnitImages], ev.Units[billing.UnitTokens], ev.Units[billing.UnitSeconds],
		int64(ev.TenantUnitPrice), int64(ev.TenantCost), int64(ev.VendorUnitPrice), int64(ev.VendorCost),
		ev.Currency, ev.PriceVersion, ev.Adjusts, MonthStart(ev.Time), int64(ev.AttemptLatency))
}

// MonthStart is the start of t's month (UTC) in µs: stored with each event
// so monthly rollups group on a column, not a date function per row.
func MonthStart(t time.Time) int64 {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).UnixMicro()
}

// UnitsJSON encodes units as a JSON object with sorted keys.
func UnitsJSON(u billing.Units) string {
	switch len(u) {
	case 0:
		return "{}"
	case 1:
		for k, v := range u {
			if k == billing.UnitCalls {
				return `{"calls":` + strconv.FormatInt(v, 10) + "}"
			}
		}
	}
	var small [8]string
	keys := small[:0]
	for k := range u {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf [128]byte
	b := append(buf[:0], '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if plainKey(k) {
			b = append(append(append(b, '"'), k...), '"')
		} else {
			kb, _ := json.Marshal(k)
			b = append(b, kb...)
		}
		b = append(b, ':')
		b = strconv.AppendInt(b, u[k], 10)
	}
	return string(append(b, '}'))
}

// plainKey reports whether k encodes in JSON as itself in quotes (what
// json.Marshal does for these bytes), so UnitsJSON can skip the encoder.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Rows is what both databases' query results have in common (pgx.Rows,
// *sql.Rows); the caller closes them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ReadEvents calls fn for each event of rows, the rows of a Select in time
// and key order (see splitter: kind is the filter's). fn's error is
// returned as it is; a failure to read rows is wrapped with what ("pgledger:
// query").
func ReadEvents(rows Rows, kind billing.Kind, fn func(billing.Event) error, what string) error {
	sp := splitter{kind: kind, fn: fn}
	for rows.Next() {
		ev, err := scan(rows.Scan)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := sp.add(ev); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return sp.flush()
}

// ReadRows returns the rows of a Rollup query, sorted (see sortRows); a
// failure is wrapped with what ("pgledger: rollup").
func ReadRows(rows Rows, what string) ([]billing.Row, error) {
	var out []billing.Row
	for rows.Next() {
		r, err := scanRow(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	sortRows(out)
	return out, nil
}

// scan reads one row selected with Columns.
func scan(scan func(dest ...any) error) (billing.Event, error) {
	var ev billing.Event
	var kind, outcome, units string
	var attempt, t, ing, lat, images, tokens, seconds, tup, tc, vup, vc, month, alat int64
	err := scan(&ev.Key, &ev.CallID, &kind, &attempt, &t, &ing, &ev.Tenant, &ev.Vendor, &ev.Tool, &ev.Capability,
		&outcome, &ev.Reason, &lat, &units, &images, &tokens, &seconds, &tup, &tc, &vup, &vc, &ev.Currency, &ev.PriceVersion, &ev.Adjusts, &month, &alat)
	if err != nil {
		return ev, err
	}
	ev.Kind, ev.Outcome, ev.Attempt = billing.Kind(kind), billing.Outcome(outcome), int(attempt)
	ev.Time, ev.Ingested, ev.Latency, ev.AttemptLatency = time.UnixMicro(t).UTC(), time.UnixMicro(ing).UTC(), time.Duration(lat), time.Duration(alat)
	ev.TenantUnitPrice, ev.TenantCost, ev.VendorUnitPrice, ev.VendorCost = billing.Micros(tup), billing.Micros(tc), billing.Micros(vup), billing.Micros(vc)
	if units == "" { // see UnitsColumn
		ev.Units = billing.Units{billing.UnitCalls: 1}
		for _, u := range [...]struct {
			name string
			n    int64
		}{{billing.UnitImages, images}, {billing.UnitTokens, tokens}, {billing.UnitSeconds, seconds}} {
			if u.n != 0 {
				ev.Units[u.name] = u.n
			}
		}
		return ev, nil
	}
	if err := json.Unmarshal([]byte(units), &ev.Units); err != nil {
		return ev, fmt.Errorf("event %s: units: %w", ev.Key, err)
	}
	return ev, nil
}

// Dialect is what differs between the databases.
type Dialect struct {
	Placeholder func(n int) string // 1-based
}

// Where builds a WHERE clause for f on the events table, numbering
// placeholders from 1.
func (d Dialect) Where(f billing.Filter) (string, []any) { return d.where("time_us", f) }

// where builds a WHERE clause for f, with From and To bounding timeCol.
func (d Dialect) where(timeCol string, f billing.Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "?", d.Placeholder(len(args))))
	}
	if !f.From.IsZero() {
		add(timeCol+" >= ?", f.From.UnixMicro())
	}
	if !f.To.IsZero() {
		add(timeCol+" < ?", f.To.UnixMicro())
	}
	if f.Tenant != "" {
		add("tenant = ?", f.Tenant)
	}
	if f.Vendor != "" {
		add("vendor = ?", f.Vendor)
	}
	switch f.Kind {
	case "":
	case billing.KindAttempt: // merged rows hold an attempt too
		args = append(args, string(f.Kind))
		conds = append(conds, "(kind = "+d.Placeholder(len(args))+" OR "+merged+")")
	default:
		add("kind = ?", string(f.Kind))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// LegacyColumns is Columns for a table made before attempt_latency_ns
// (opened read-only, so not migrated): every row there holds one event.
var LegacyColumns = strings.Replace(Columns, ", attempt_latency_ns", ", 0", 1)

// Select is the query for Ledger.Query.
func (d Dialect) Select(table string, f billing.Filter) (string, []any) {
	return d.SelectColumns(table, Columns, f)
}

// SelectColumns is Select reading cols (Columns or LegacyColumns).
func (d Dialect) SelectColumns(table, cols string, f billing.Filter) (string, []any) {
	w, args := d.Where(f)
	return "SELECT " + cols + " FROM " + table + w + " ORDER BY time_us, key", args
}

// Rollup is the query for Ledger.Rollup; read its rows with ReadRows.
func (d Dialect) Rollup(table string, q billing.RollupQuery) (string, []any) {
	w, args := d.Where(q.Filter)
	// A merged row is a call event and an attempt event: it counts as
	// both, unless the filter keeps only one kind, when it counts as
	// that one (a call's units and charge, or an attempt's payout).
	call, att, tenant, vendor := "kind = 'call'", "(kind = 'attempt' OR "+merged+")", "1 = 1", "1 = 1"
	switch q.Kind {
	case billing.KindAttempt:
		call, tenant = "1 = 0", "NOT "+merged
	case billing.KindCall:
		att, vendor = "1 = 0", "NOT "+merged
	}
	units := "kind <> 'attempt' AND " + tenant
	return groupedSelect(table, w, rollupDims(q, "(time_us / 3600000000) * 3600000000", "(time_us / 86400000000) * 86400000000"), `
	CAST(SUM(CASE WHEN `+call+` THEN 1 ELSE 0 END) AS BIGINT),
	CAST(SUM(CASE WHEN `+call+` AND outcome = 'rejected' THEN 1 ELSE 0 END) AS BIGINT),
	CAST(SUM(CASE WHEN `+call+` AND outcome IN ('error', 'timeout') THEN 1 ELSE 0 END) AS BIGINT),
	CAST(SUM(CASE WHEN `+call+` AND outcome IN ('cached', 'stale') THEN 1 ELSE 0 END) AS BIGINT),
	CAST(SUM(CASE WHEN `+att+` THEN 1 ELSE 0 END) AS BIGINT),
	CAST(SUM(CASE WHEN `+att+` AND outcome = 'ok' THEN 1 ELSE 0 END) AS BIGINT),
	CAST(SUM(CASE WHEN `+units+` THEN images ELSE 0 END) AS BIGINT),
	CAST(SUM(CASE WHEN `+units+` THEN tokens ELSE 0 END) AS BIGINT),
	CAST(SUM(CASE WHEN `+units+` THEN seconds ELSE 0 END) AS BIGINT),
	CAST(SUM(CASE WHEN `+tenant+` THEN tenant_cost ELSE 0 END) AS BIGINT),
	CAST(SUM(CASE WHEN `+vendor+` THEN vendor_cost ELSE 0 END) AS BIGINT)`), args
}

// rollupDims are the columns a rollup groups by, in scanRow's order
// (tenant, vendor, tool, period, currency): a dimension q does not group
// by is the empty string and no period is 0. hour and day are the
// expressions of a row's hour and day.
func rollupDims(q billing.RollupQuery, hour, day string) []string {
	period := "0"
	switch q.Period() {
	case billing.ByHour:
		period = hour
	case billing.ByDay:
		period = day
	case billing.ByMonth:
		period = "month_us"
	}
	dim := func(g, col string) string {
		if q.Has(g) {
			return col
		}
		return "''"
	}
	return []string{dim(billing.ByTenant, "tenant"), dim(billing.ByVendor, "vendor"), dim(billing.ByTool, "tool"), period, "currency"}
}

// groupedSelect selects dims and sums from table with where, grouped by
// the dims that are columns.
func groupedSelect(table, where string, dims []string, sums string) string {
	var group []string
	for _, d := range dims {
		if d != "''" && d != "0" {
			group = append(group, d)
		}
	}
	return "SELECT " + strings.Join(dims, ", ") + ", " + sums + " FROM " + table + where + " GROUP BY " + strings.Join(group, ", ")
}

// scanRow reads one row of a Rollup query.
func scanRow(scan func(dest ...any) error) (billing.Row, error) {
	var r billing.Row
	var period int64
	var tc, vc int64
	err := scan(&r.Tenant, &r.Vendor, &r.Tool, &period, &r.Currency, &r.Calls, &r.Rejected, &r.Failed, &r.Cached,
		&r.Attempts, &r.Paid, &r.Images, &r.Tokens, &r.Seconds, &tc, &vc)
	if period != 0 {
		r.Period = time.UnixMicro(period).UTC()
	}
	r.TenantCost, r.VendorCost = billing.Micros(tc), billing.Micros(vc)
	return r, err
}

// sortRows orders rows by period, tenant, vendor, tool, currency (byte
// order, the same for every database).
func sortRows(rows []billing.Row) {
	slices.SortFunc(rows, func(a, b billing.Row) int {
		if c := a.Period.Compare(b.Period); c != 0 {
			return c
		}
		for _, p := range [][2]string{{a.Tenant, b.Tenant}, {a.Vendor, b.Vendor}, {a.Tool, b.Tool}, {a.Currency, b.Currency}} {
			if c := strings.Compare(p[0], p[1]); c != 0 {
				return c
			}
		}
		return 0
	})
}

// splitter turns the rows of a Select, in time and key order, into the
// events they hold, in the same order: a merged row (billing.MergeAttempt)
// is its call event and its attempt event, whose keys sort apart from each
// other, so the events of one time are sorted before they are passed on.
// kind is the filter's: a merged row read for kind call gives its call
// event only, for kind attempt its attempt event only.
type splitter struct {
	kind billing.Kind
	fn   func(billing.Event) error
	buf  []billing.Event
}

// add takes the next row's event.
func (s *splitter) add(ev billing.Event) error {
	if len(s.buf) > 0 && !s.buf[0].Time.Equal(ev.Time) {
		if err := s.flush(); err != nil {
			return err
		}
	}
	call, att, ok := ev.Split()
	switch {
	case !ok:
		s.buf = append(s.buf, ev)
	case s.kind == billing.KindCall:
		s.buf = append(s.buf, call)
	case s.kind == billing.KindAttempt:
		s.buf = append(s.buf, att)
	default:
		s.buf = append(s.buf, call, att)
	}
	return nil
}

// flush passes on the events held; call it after the last row.
func (s *splitter) flush() error {
	if len(s.buf) > 1 {
		slices.SortStableFunc(s.buf, func(a, b billing.Event) int { return strings.Compare(a.Key, b.Key) })
	}
	for i := range s.buf {
		if err := s.fn(s.buf[i]); err != nil {
			s.buf = s.buf[:0]
			return err
		}
	}
	s.buf = s.buf[:0]
	return nil
}
