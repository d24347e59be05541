package sqlledger_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
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
		c0 := cpuTime()
		if err := l.Append(context.Background(), evs); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	if cpu > 0 {
		b.ReportMetric(float64(n)/cpu.Seconds(), "events/cpu-s")
	}
	b.ReportMetric(0, "ns/op")
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
