package pgledger_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/internal/ledgersql"
	"github.com/toolhub/toolhub/billing/ledgertest"
)

// BenchmarkAppend measures batched ingest (4096 events per transaction):
// see the events/s metric.
func BenchmarkAppend(b *testing.B) {
	l := open(b, newSchema(b))
	const batch = 4096
	evs := make([]billing.Event, batch)
	n := 0
	for b.Loop() {
		b.StopTimer()
		for j := range evs {
			evs[j] = ledgertest.Synthetic(n)
			n++
		}
		b.StartTimer()
		if err := l.Append(context.Background(), evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAppendCalls measures the ingest of what the meter writes for
// single-attempt calls: one row per call, standing for its call event and
// its attempt event (billing.MergeAttempt), 4096 rows per Append. events/s
// counts usage events (two a row, the unit BenchmarkAppend counts). Each
// batch is also COPYed, in the same process, into a table of the same
// columns without key, index or rollups (raw-rows/s), and x-raw is the
// time of the raw COPYs over the ledger's: what the ledger's key, index,
// rollups and transaction cost over moving the bytes.
func BenchmarkAppendCalls(b *testing.B) {
	schema := newSchema(b)
	l := open(b, schema)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testDSN())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	cols := strings.Split(ledgersql.Columns, ", ")
	// The ledger's columns and types; LIKE copies no key or index.
	if _, err := conn.Exec(ctx, "CREATE TABLE "+pgx.Identifier{schema, "raw"}.Sanitize()+" (LIKE "+pgx.Identifier{schema, "usage_events"}.Sanitize()+")"); err != nil {
		b.Fatal(err)
	}
	const batch = 4096
	evs := make([]billing.Event, batch)
	n := 0
	var ledger, raw time.Duration
	vals := make([]any, 0, ledgersql.NumColumns)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		for j := range evs {
			evs[j] = ledgertest.SyntheticCall(n)
			n++
		}
		t0 := time.Now()
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{schema, "raw"}, cols, pgx.CopyFromSlice(len(evs), func(i int) ([]any, error) {
			vals = ledgersql.AppendValues(vals[:0], &evs[i])
			return vals, nil
		})); err != nil {
			b.Fatal(err)
		}
		raw += time.Since(t0)
		b.StartTimer()
		t0 = time.Now()
		if err := l.Append(ctx, evs); err != nil {
			b.Fatal(err)
		}
		ledger += time.Since(t0)
	}
	b.ReportMetric(float64(2*n)/ledger.Seconds(), "events/s")
	b.ReportMetric(float64(n)/ledger.Seconds(), "rows/s")
	b.ReportMetric(float64(n)/raw.Seconds(), "raw-rows/s")
	b.ReportMetric(raw.Seconds()/ledger.Seconds(), "x-raw")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAppendReplay measures batches half stored already, half new
// (a replay overlapping new events): the path that finds out which events
// are new, after a first try that fails. Duplicates count in events/s.
func BenchmarkAppendReplay(b *testing.B) {
	l := open(b, newSchema(b))
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

// BenchmarkMonthlyReport measures a month × tenant × vendor × tool rollup
// over N generated events: N from $TOOLHUB_BENCH_EVENTS, default 1e6 (the
// target is 10M).
func BenchmarkMonthlyReport(b *testing.B) {
	l := open(b, newSchema(b))
	n := 1_000_000
	if s := os.Getenv("TOOLHUB_BENCH_EVENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatalf("TOOLHUB_BENCH_EVENTS=%q: %v", s, err)
		}
	}
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
	q := billing.RollupQuery{GroupBy: []string{"month", "tenant", "vendor", "tool"}}
	for b.Loop() {
		rows, err := l.Rollup(context.Background(), q)
		if err != nil || len(rows) == 0 {
			b.Fatal(rows, err)
		}
	}
	b.ReportMetric(float64(n), "events")
}
