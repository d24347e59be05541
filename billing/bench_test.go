package billing_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
)

// BenchmarkMeterRecord measures Record on the call path, with the writer
// draining into a real SQLite ledger: p50 and p99 per Record (target p50
// ≤ 2 µs). "buffered" is the normal case (the buffer has room: run it with
// -benchtime ≤ 262144x); "overload" records faster than the ledger
// ingests, so about half the events take the spill path.
func BenchmarkMeterRecord(b *testing.B) {
	b.Run("buffered", func(b *testing.B) { benchRecord(b, 1<<18) })
	b.Run("overload", func(b *testing.B) { benchRecord(b, 4096) })
}

func benchRecord(b *testing.B, buffer int) {
	dir := b.TempDir()
	l := openLedger(b, dir)
	m, err := billing.NewMeter(l, &billing.MeterOptions{SpillDir: filepath.Join(dir, "spill"), Buffer: buffer, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	evs := make([]billing.Event, 1<<16)
	for i := range evs {
		evs[i] = ledgertest.Synthetic(i)
	}
	lat := make([]time.Duration, 0, 1<<20)
	i := 0
	for b.Loop() {
		ev := evs[i&(len(evs)-1)]
		i++
		t0 := time.Now()
		m.Record(ev)
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(t0))
		}
	}
	b.StopTimer()
	m.Flush(context.Background())
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	}
	s := m.Stats()
	b.ReportMetric(float64(s.Spilled)/float64(max(1, s.Recorded)), "spilled/op")
}
