package sqlledger_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/x/sqlitedb"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/internal/ledgersql"
	"github.com/toolhub/toolhub/billing/ledgertest"
	"github.com/toolhub/toolhub/internal/x/cputime"
)

// BenchmarkAppend measures batched ingest (4096 events per transaction,
// as the meter writes): see the events/s metric (target ≥ 100k/s), and
// events/cpu-s, the events stored per second of the process's CPU time
// spent in Append (user and system, every goroutine: the writer, its
// producer, the GC). On a shared machine events/s measures the neighbours;
// events/cpu-s is what one otherwise idle core would ingest (the writer is
// one goroutine, its producer overlaps it).
func BenchmarkAppend(b *testing.B) {
	l := open(b)
	const batch = 4096
	evs := make([]billing.Event, batch)
	n := 0
	var cpu time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		for j := range evs {
			evs[j] = ledgertest.Synthetic(n)
			n++
		}
		b.StartTimer()
		c0 := cputime.Process()
		if err := l.Append(context.Background(), evs); err != nil {
			b.Fatal(err)
		}
		cpu += cputime.Process() - c0
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	if cpu > 0 {
		b.ReportMetric(float64(n)/cpu.Seconds(), "events/cpu-s")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAppendCalls measures the ingest of what the meter writes for
// calls, 4096 rows per transaction: answered, single-attempt calls, each
// one row standing for its call event and its attempt event
// (billing.MergeAttempt); mixed, one call in 20 failed instead (a call
// event of its own, with a reason: no chunk of 256 rows then binds its
// shared columns once). events/s and
// events/cpu-s count usage events (two a merged row, the unit
// BenchmarkAppend counts); rows/cpu-s counts rows. Each batch is also
// written, in the same process, by a bare INSERT of the same rows into a
// table without keys, index or rollups (the same 256-row prepared
// statement, through database/sql): raw-rows/cpu-s, and x-raw, the
// ledger's rows/cpu-s over the bare INSERT's, which the machine's load
// moves much less than either figure.
func BenchmarkAppendCalls(b *testing.B) {
	failed := func(i int) billing.Event {
		ev := ledgertest.Synthetic(2 * i)
		ev.Outcome, ev.Reason, ev.TenantUnitPrice, ev.TenantCost = billing.OutcomeError, "unavailable: vendor down", 0, 0
		return ev
	}
	for _, bb := range []struct {
		name string
		row  func(i int) billing.Event
	}{
		{"answered", ledgertest.SyntheticCall},
		{"mixed", func(i int) billing.Event {
			if i%20 == 19 {
				return failed(i)
			}
			return ledgertest.SyntheticCall(i)
		}},
	} {
		b.Run(bb.name, func(b *testing.B) { appendRows(b, bb.row) })
	}
}

func appendRows(b *testing.B, row func(i int) billing.Event) {
	l := open(b)
	raw := openRaw(b)
	const batch = 4096
	evs := make([]billing.Event, batch)
	n, events := 0, 0
	var cpu, rawCPU time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		for j := range evs {
			evs[j] = row(n)
			n++
			if events++; evs[j].Merged() {
				events++
			}
		}
		c0 := cputime.Process()
		if err := raw.insert(evs); err != nil {
			b.Fatal(err)
		}
		rawCPU += cputime.Process() - c0
		b.StartTimer()
		c0 = cputime.Process()
		if err := l.Append(context.Background(), evs); err != nil {
			b.Fatal(err)
		}
		cpu += cputime.Process() - c0
	}
	if l.Stats().Appended != int64(n) {
		b.Fatalf("stored %d rows, want %d", l.Stats().Appended, n)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	if cpu > 0 && rawCPU > 0 {
		b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
		b.ReportMetric(float64(n)/cpu.Seconds(), "rows/cpu-s")
		b.ReportMetric(float64(n)/rawCPU.Seconds(), "raw-rows/cpu-s")
		b.ReportMetric(rawCPU.Seconds()/cpu.Seconds(), "x-raw")
	}
	b.ReportMetric(0, "ns/op")
}

// rawTable is the baseline of BenchmarkAppendCalls: the ledger's columns
// in a table of their own, no key, index or rollup.
type rawTable struct {
	db   *sql.DB
	stmt *sql.Stmt
	args []any
}

func openRaw(b *testing.B) *rawTable {
	db, err := sqlitedb.Open(filepath.Join(b.TempDir(), "raw.db"), &sqlitedb.Options{MaxOpenConns: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	cols := strings.Split(ledgersql.Columns, ", ")
	if _, err := db.Exec("CREATE TABLE raw (" + strings.Join(cols, " ANY, ") + " ANY)"); err != nil {
		b.Fatal(err)
	}
	row := "(?" + strings.Repeat(",?", ledgersql.NumColumns-1) + ")"
	stmt, err := db.Prepare("INSERT INTO raw (" + ledgersql.Columns + ") VALUES " + row + strings.Repeat(","+row, 255))
	if err != nil {
		b.Fatal(err)
	}
	return &rawTable{db: db, stmt: stmt}
}

// insert writes evs (a multiple of 256) in one transaction.
func (r *rawTable) insert(evs []billing.Event) error {
	tx, err := r.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	s := tx.Stmt(r.stmt)
	for i := 0; i < len(evs); i += 256 {
		r.args = r.args[:0]
		for j := i; j < i+256; j++ {
			r.args = ledgersql.AppendValues(r.args, &evs[j])
		}
		if _, err := s.Exec(r.args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// BenchmarkAppendReplay measures batches half stored already, half new
// (a replay overlapping new events): the path that finds out which events
// are new, after a first try that fails. Duplicates count in events/s.
func BenchmarkAppendReplay(b *testing.B) {
	l := open(b)
	const batch = 4096
	evs := make([]billing.Event, batch)
	n := batch / 2 // so the first batch is all new
	for b.Loop() {
		b.StopTimer()
		for j := range evs {
			evs[j] = ledgertest.Synthetic(n - batch/2 + j)
		}
		n += batch / 2
		b.StartTimer()
		if err := l.Append(context.Background(), evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(0, "ns/op")
}

// benchEvents is the number of events for the report benchmark:
// $TOOLHUB_BENCH_EVENTS or 1e6 (the target is 10M: set it to 10000000).
func benchEvents(b *testing.B) int {
	if s := os.Getenv("TOOLHUB_BENCH_EVENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("TOOLHUB_BENCH_EVENTS=%q: %v", s, err)
		}
		return n
	}
	return 1_000_000
}

// BenchmarkMonthlyReport measures a month × tenant × vendor × tool rollup
// over N generated events (N from $TOOLHUB_BENCH_EVENTS, default 1e6).
func BenchmarkMonthlyReport(b *testing.B) {
	l := open(b)
	n := benchEvents(b)
	start := time.Now()
	evs := make([]billing.Event, 0, 8192)
	for i := range n {
		evs = append(evs, ledgertest.Synthetic(i))
		if len(evs) == cap(evs) || i == n-1 {
			if err := l.Append(context.Background(), evs); err != nil {
				b.Fatal(err)
			}
			evs = evs[:0]
		}
	}
	b.Logf("loaded %d events in %v", n, time.Since(start))
	q := billing.RollupQuery{GroupBy: []string{"month", "tenant", "vendor", "tool"}}
	b.ResetTimer()
	for b.Loop() {
		rows, err := l.Rollup(context.Background(), q)
		if err != nil || len(rows) == 0 {
			b.Fatal(rows, err)
		}
	}
	b.ReportMetric(float64(n), "events")
}
