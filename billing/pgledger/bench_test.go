package pgledger_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/toolhub/toolhub/billing"
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
