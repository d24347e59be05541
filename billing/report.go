package billing

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolhub/toolhub/hub"
)

// Report formats.
const (
	FormatCSV   = "csv"
	FormatJSON  = "json"
	FormatTable = "table"
)

// ReportQuery asks for a usage report: sums over [From, To) grouped by
// GroupBy (tenant, vendor, tool, hour, day, month), optionally for one
// tenant or vendor.
type ReportQuery struct {
	From, To time.Time
	GroupBy  []string
	Format   string // csv, json or table; "" means table
	Tenant   string
	Vendor   string
	// Hide names money columns left out (see [Audience.Hidden]); nil
	// shows every column.
	Hide []string
}

// Columns of every usage report after the grouping columns. Money is a
// decimal string with 6 decimals in every format.
var reportColumns = []string{"currency", "calls", "rejected", "failed", "cached", "attempts", "paid",
	"images", "tokens", "seconds", "tenant_cost", "vendor_cost", "margin"}

// PeriodLabel formats a period start for a grouping.
func PeriodLabel(period string, t time.Time) string {
	switch period {
	case ByHour:
		return t.UTC().Format("2006-01-02T15")
	case ByDay:
		return t.UTC().Format("2006-01-02")
	case ByMonth:
		return t.UTC().Format("2006-01")
	}
	return ""
}

func (r Row) values(groupBy []string) []string {
	var out []string
	for _, g := range groupBy {
		switch g {
		case ByTenant:
			out = append(out, r.Tenant)
		case ByVendor:
			out = append(out, r.Vendor)
		case ByTool:
			out = append(out, r.Tool)
		default:
			out = append(out, PeriodLabel(g, r.Period))
		}
	}
	i := strconv.FormatInt
	return append(out, r.Currency, i(r.Calls, 10), i(r.Rejected, 10), i(r.Failed, 10), i(r.Cached, 10),
		i(r.Attempts, 10), i(r.Paid, 10), i(r.Images, 10), i(r.Tokens, 10), i(r.Seconds, 10),
		r.TenantCost.String(), r.VendorCost.String(), r.Margin().String())
}

// Totals sums rows per currency, in currency order.
func Totals(rows []Row) []Row {
	m := map[string]*Row{}
	var curs []string
	for _, r := range rows {
		t := m[r.Currency]
		if t == nil {
			t = &Row{Currency: r.Currency}
			m[r.Currency] = t
			curs = append(curs, r.Currency)
		}
		t.Calls += r.Calls
		t.Rejected += r.Rejected
		t.Failed += r.Failed
		t.Cached += r.Cached
		t.Attempts += r.Attempts
		t.Paid += r.Paid
		t.Images += r.Images
		t.Tokens += r.Tokens
		t.Seconds += r.Seconds
		t.TenantCost += r.TenantCost
		t.VendorCost += r.VendorCost
	}
	slices.Sort(curs)
	out := make([]Row, len(curs))
	for i, c := range curs {
		out[i] = *m[c]
	}
	return out
}

// Report writes a usage report from the ledger's rollups.
func Report(ctx context.Context, l Ledger, w io.Writer, q ReportQuery) error {
	rq := RollupQuery{Filter: Filter{From: q.From, To: q.To, Tenant: q.Tenant, Vendor: q.Vendor}, GroupBy: q.GroupBy}
	if err := rq.Validate(); err != nil {
		return err
	}
	switch q.Format {
	case "", FormatTable, FormatCSV, FormatJSON:
	default:
		return fmt.Errorf("billing: format %q: want csv, json or table", q.Format)
	}
	rows, err := l.Rollup(ctx, rq)
	if err != nil {
		return err
	}
	return WriteRows(w, q, rows)
}

// WriteRows writes rollup rows as a report in q.Format.
func WriteRows(w io.Writer, q ReportQuery, rows []Row) error {
	header := append(slices.Clone(q.GroupBy), reportColumns...)
	hidden := hiddenColumns(header, q.Hide)
	header = dropIndexes(header, hidden)
	switch q.Format {
	case FormatCSV:
		cw := csv.NewWriter(w)
		cw.Write(header)
		for _, r := range rows {
			cw.Write(dropIndexes(r.values(q.GroupBy), hidden))
		}
		cw.Flush()
		return cw.Error()
	case FormatJSON:
		type jsonRow struct {
			Row
			Period string `json:"period,omitempty"`
			Margin Micros `json:"margin"`
		}
		conv := func(rs []Row, period string) []jsonRow {
			out := make([]jsonRow, len(rs))
			for i, r := range rs {
				out[i] = jsonRow{Row: r, Period: PeriodLabel(period, r.Period), Margin: r.Margin()}
			}
			return out
		}
		rq := RollupQuery{GroupBy: q.GroupBy}
		doc := map[string]any{
			"from": timeOrNil(q.From), "to": timeOrNil(q.To), "group_by": nonNil(q.GroupBy),
			"rows": withoutFields(conv(rows, rq.Period()), q.Hide), "totals": withoutFields(conv(Totals(rows), ""), q.Hide),
			"units": ReportUnits,
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	default:
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(dropIndexes(r.values(q.GroupBy), hidden), "\t")+"\t")
		}
		for _, t := range Totals(rows) {
			v := t.values(nil)
			lead := make([]string, len(q.GroupBy))
			if len(lead) > 0 {
				lead[0] = "TOTAL"
			} else {
				v[0] = "TOTAL " + v[0]
			}
			fmt.Fprintln(tw, strings.Join(dropIndexes(append(lead, v...), hidden), "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "\n%s\n", strings.ReplaceAll(ReportUnits, "; ", "\n"))
		return err
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Statement is a tenant invoice or a vendor payout: lines by vendor and
// tool (invoice) or tool (payout), with totals per currency.
type Statement struct {
	Kind   string          `json:"kind"`  // "invoice" or "payout"
	Party  string          `json:"party"` // the tenant or the vendor
	From   time.Time       `json:"from"`
	To     time.Time       `json:"to"`
	Lines  []StatementLine `json:"lines"`
	Totals []Total         `json:"totals"`
	// Refused (invoices) lists calls charged nothing because they were
	// refused (an unknown tool, bad arguments, a budget, a rate limit) or
	// failed: they are not billable lines.
	Refused []RefusedLine `json:"refused,omitempty"`
	// Units says what the lines' calls count (StatementUnits).
	Units string `json:"units"`
}

// RefusedLine counts a tenant's calls to one tool that were charged nothing.
type RefusedLine struct {
	Vendor  string `json:"vendor,omitempty"`
	Tool    string `json:"tool"`
	Refused int64  `json:"refused"` // refused before any vendor was paid
	Failed  int64  `json:"failed"`  // every vendor failed; no answer
}

// StatementUnits say what a statement's calls count.
var StatementUnits = map[string]string{
	"invoice": "calls: the tenant's calls that got an answer (from a vendor, a fallback vendor or the cache), one per call however many vendor attempts it took; refused and failed calls are charged nothing and listed apart",
	"payout":  "calls: paid attempts: each call toolhub made to this vendor and pays for, retries and fallback steps included, so one tenant call can be several attempts (or none, when answered from the cache)",
}

// ReportUnits explain a usage report's counting columns: calls are what
// tenants asked for, attempts what toolhub sent to vendors.
const ReportUnits = `calls: tenant calls, one per request whatever happened (billed to the tenant unless rejected or failed); ` +
	`rejected, failed, cached: how many of those calls were refused, failed at every vendor, or answered from the cache; ` +
	`attempts: requests toolhub sent to vendors, retries and fallback steps included (a call makes zero, one or several); ` +
	`paid: the attempts toolhub pays a vendor for`

// StatementLine is one line of a [Statement].
type StatementLine struct {
	Vendor   string `json:"vendor,omitempty"`
	Tool     string `json:"tool"`
	Currency string `json:"currency"`
	Calls    int64  `json:"calls"` // billed calls (invoice) or paid attempts (payout)
	Images   int64  `json:"images,omitempty"`
	Tokens   int64  `json:"tokens,omitempty"`
	Seconds  int64  `json:"seconds,omitempty"`
	Amount   Micros `json:"amount"`
}

// Total is a statement's total in one currency.
type Total struct {
	Currency string `json:"currency"`
	Amount   Micros `json:"amount"`
}

// Invoice is what tenant owes for [from, to): its call events' charges
// (and adjustments), by vendor and tool.
func Invoice(ctx context.Context, l Ledger, tenant string, from, to time.Time) (*Statement, error) {
	if tenant == "" {
		return nil, &hub.Error{Code: hub.CodeInvalidRequest, Message: "billing: invoice: tenant is required"}
	}
	rows, err := l.Rollup(ctx, RollupQuery{Filter: Filter{From: from, To: to, Tenant: tenant}, GroupBy: []string{ByVendor, ByTool}})
	if err != nil {
		return nil, err
	}
	st := &Statement{Kind: "invoice", Party: tenant, From: from.UTC(), To: to.UTC(), Units: StatementUnits["invoice"]}
	for _, r := range rows {
		if r.Rejected+r.Failed > 0 {
			st.Refused = append(st.Refused, RefusedLine{Vendor: r.Vendor, Tool: r.Tool, Refused: r.Rejected, Failed: r.Failed})
		}
		billed := r.Calls - r.Rejected - r.Failed
		if billed == 0 && r.TenantCost == 0 {
			continue // attempts only, or refused and failed calls: nothing billed
		}
		st.Lines = append(st.Lines, StatementLine{Vendor: r.Vendor, Tool: r.Tool, Currency: r.Currency,
			Calls: billed, Images: r.Images, Tokens: r.Tokens, Seconds: r.Seconds, Amount: r.TenantCost})
	}
	st.total()
	return st, nil
}

// Payout is what toolhub owes vendor for [from, to): its paid attempts,
// by tool.
func Payout(ctx context.Context, l Ledger, vendor string, from, to time.Time) (*Statement, error) {
	if vendor == "" {
		return nil, &hub.Error{Code: hub.CodeInvalidRequest, Message: "billing: payout: vendor is required"}
	}
	rows, err := l.Rollup(ctx, RollupQuery{Filter: Filter{From: from, To: to, Vendor: vendor}, GroupBy: []string{ByTool}})
	if err != nil {
		return nil, err
	}
	st := &Statement{Kind: "payout", Party: vendor, From: from.UTC(), To: to.UTC(), Units: StatementUnits["payout"]}
	for _, r := range rows {
		if r.Attempts == 0 && r.VendorCost == 0 {
			continue
		}
		st.Lines = append(st.Lines, StatementLine{Vendor: vendor, Tool: r.Tool, Currency: r.Currency, Calls: r.Paid, Amount: r.VendorCost})
	}
	st.total()
	return st, nil
}

func (st *Statement) total() {
	m := map[string]Micros{}
	for _, l := range st.Lines {
		m[l.Currency] += l.Amount
	}
	for c, a := range m {
		st.Totals = append(st.Totals, Total{c, a})
	}
	slices.SortFunc(st.Totals, func(a, b Total) int { return strings.Compare(a.Currency, b.Currency) })
}

// Write writes the statement as csv, json or table.
func (st *Statement) Write(w io.Writer, format string) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	case FormatCSV:
		cw := csv.NewWriter(w)
		cw.Write([]string{"vendor", "tool", "currency", "calls", "images", "tokens", "seconds", "amount"})
		for _, l := range st.Lines {
			i := strconv.FormatInt
			cw.Write([]string{l.Vendor, l.Tool, l.Currency, i(l.Calls, 10), i(l.Images, 10), i(l.Tokens, 10), i(l.Seconds, 10), l.Amount.String()})
		}
		cw.Flush()
		return cw.Error()
	case "", FormatTable:
		fmt.Fprintf(w, "%s for %s, %s to %s\n\n", st.Kind, st.Party, st.From.Format(time.RFC3339), st.To.Format(time.RFC3339))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "vendor\ttool\tcurrency\tcalls\timages\ttokens\tseconds\tamount\t")
		for _, l := range st.Lines {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t\n", l.Vendor, l.Tool, l.Currency, l.Calls, l.Images, l.Tokens, l.Seconds, l.Amount)
		}
		for _, t := range st.Totals {
			fmt.Fprintf(tw, "TOTAL\t\t%s\t\t\t\t\t%s\t\n", t.Currency, t.Amount)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(st.Refused) > 0 {
			fmt.Fprintf(w, "\nnot billed (refused or failed, charged nothing)\n\n")
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "vendor\ttool\trefused\tfailed\t")
			for _, l := range st.Refused {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t\n", orDash(l.Vendor), l.Tool, l.Refused, l.Failed)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if st.Units != "" {
			fmt.Fprintf(w, "\n%s\n", st.Units)
		}
		return nil
	}
	return fmt.Errorf("billing: format %q: want csv, json or table", format)
}

// Difference is one disagreement between toolhub's ledger and a vendor's
// own counts.
type Difference struct {
	Vendor string `json:"vendor"`
	Tool   string `json:"tool"`
	Day    string `json:"day"`   // YYYY-MM-DD (UTC)
	Field  string `json:"field"` // "calls" or "amount"
	Ours   string `json:"ours"`
	Theirs string `json:"theirs"`
}

// Reconcile compares the ledger's paid attempts per vendor, tool and day
// in [from, to) with a vendor's counts, given as CSV with a header:
// vendor,tool,day,calls[,amount] (day YYYY-MM-DD, amount a decimal). It
// lists every difference, including days or tools only one side has.
// Vendors absent from the CSV are not compared.
func Reconcile(ctx context.Context, l Ledger, from, to time.Time, theirs io.Reader) ([]Difference, error) {
	cr := csv.NewReader(theirs)
	cr.TrimLeadingSpace = true
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("billing: reconcile: %w", err)
	}
	if len(recs) == 0 {
		return nil, errors.New("billing: reconcile: empty CSV; want a header vendor,tool,day,calls[,amount]")
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, h := range []string{"vendor", "tool", "day", "calls"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("billing: reconcile: CSV header has no %q column; want vendor,tool,day,calls[,amount]", h)
		}
	}
	ai, hasAmount := col["amount"]
	type key struct{ vendor, tool, day string }
	type counts struct {
		calls  int64
		amount Micros
	}
	their := map[key]counts{}
	vendors := map[string]bool{}
	for n, rec := range recs[1:] {
		k := key{rec[col["vendor"]], rec[col["tool"]], rec[col["day"]]}
		if _, err := time.Parse("2006-01-02", k.day); err != nil {
			return nil, fmt.Errorf("billing: reconcile: line %d: day %q: want YYYY-MM-DD", n+2, k.day)
		}
		c, err := strconv.ParseInt(strings.TrimSpace(rec[col["calls"]]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("billing: reconcile: line %d: calls %q: want a whole number", n+2, rec[col["calls"]])
		}
		v := their[k]
		v.calls += c
		if hasAmount {
			a, err := ParseMicros(rec[ai])
			if err != nil {
				return nil, fmt.Errorf("billing: reconcile: line %d: %w", n+2, err)
			}
			v.amount += a
		}
		their[k] = v
		vendors[k.vendor] = true
	}
	rows, err := l.Rollup(ctx, RollupQuery{Filter: Filter{From: from, To: to, Kind: KindAttempt}, GroupBy: []string{ByVendor, ByTool, ByDay}})
	if err != nil {
		return nil, err
	}
	ours := map[key]counts{}
	for _, r := range rows {
		if !vendors[r.Vendor] || r.Paid == 0 && r.VendorCost == 0 {
			continue
		}
		k := key{r.Vendor, r.Tool, PeriodLabel(ByDay, r.Period)}
		v := ours[k]
		v.calls += r.Paid
		v.amount += r.VendorCost
		ours[k] = v
	}
	keys := map[key]bool{}
	for k := range ours {
		keys[k] = true
	}
	for k := range their {
		keys[k] = true
	}
	var diffs []Difference
	for k := range keys {
		o, t := ours[k], their[k]
		if o.calls != t.calls {
			diffs = append(diffs, Difference{k.vendor, k.tool, k.day, "calls", strconv.FormatInt(o.calls, 10), strconv.FormatInt(t.calls, 10)})
		}
		if hasAmount && o.amount != t.amount {
			diffs = append(diffs, Difference{k.vendor, k.tool, k.day, "amount", o.amount.String(), t.amount.String()})
		}
	}
	slices.SortFunc(diffs, func(a, b Difference) int {
		return strings.Compare(a.Vendor+"\x00"+a.Tool+"\x00"+a.Day+"\x00"+a.Field, b.Vendor+"\x00"+b.Tool+"\x00"+b.Day+"\x00"+b.Field)
	})
	return diffs, nil
}

// WriteDifferences writes differences as CSV.
func WriteDifferences(w io.Writer, diffs []Difference) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"vendor", "tool", "day", "field", "ours", "theirs"})
	for _, d := range diffs {
		cw.Write([]string{d.Vendor, d.Tool, d.Day, d.Field, d.Ours, d.Theirs})
	}
	cw.Flush()
	return cw.Error()
}

// CloudEvent is one usage event in OpenMeter's CloudEvents shape.
type CloudEvent struct {
	SpecVersion string         `json:"specversion"`
	ID          string         `json:"id"`
	Source      string         `json:"source"`
	Type        string         `json:"type"`
	Subject     string         `json:"subject"`
	Time        string         `json:"time"`
	Data        map[string]any `json:"data"`
}

// ToCloudEvent converts ev; type is "toolhub.call", "toolhub.attempt" or
// "toolhub.adjust", the id the event's key.
func ToCloudEvent(ev Event, source string) CloudEvent {
	data := map[string]any{
		"call_id": ev.CallID, "vendor": ev.Vendor, "tool": ev.Tool, "outcome": string(ev.Outcome),
		"latency_ms": float64(ev.Latency.Microseconds()) / 1000, "currency": ev.Currency,
		"tenant_cost": ev.TenantCost.String(), "vendor_cost": ev.VendorCost.String(),
		"tenant_unit_price": ev.TenantUnitPrice.String(), "vendor_unit_price": ev.VendorUnitPrice.String(),
	}
	for k, v := range ev.Units {
		data[k] = v
	}
	for k, v := range map[string]string{"capability": ev.Capability, "reason": ev.Reason, "price_version": ev.PriceVersion, "adjusts": ev.Adjusts} {
		if v != "" {
			data[k] = v
		}
	}
	if ev.Kind == KindAttempt {
		data["attempt"] = ev.Attempt
	}
	return CloudEvent{SpecVersion: "1.0", ID: ev.Key, Source: source, Type: "toolhub." + string(ev.Kind),
		Subject: ev.Tenant, Time: ev.Time.UTC().Format(time.RFC3339Nano), Data: data}
}

// ExportCloudEvents writes the events matching f as CloudEvents JSON
// lines (OpenMeter's ingest shape). source "" means "toolhub".
func ExportCloudEvents(ctx context.Context, l Ledger, f Filter, w io.Writer, source string) error {
	return exportCloudEvents(ctx, l, f, w, source, nil)
}
