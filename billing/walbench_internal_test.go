package billing

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkWALLine splits a call's write-ahead cost: encoding one event,
// a write(2) of its line alone (what a call would pay without the group
// commit), and the group commit under load (group-commit-*).
func BenchmarkWALLine(b *testing.B) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ev := Event{Key: "bench-1/1", CallID: "bench-1", Kind: KindAttempt, Attempt: 1, Time: at, Ingested: at, Tenant: "acme",
		Vendor: "doubao", Tool: "generate_image", Outcome: OutcomeOK, Latency: time.Millisecond,
		Units: Units{UnitCalls: 1, UnitTokens: 12}, VendorUnitPrice: 1000, VendorCost: 1000, Currency: "USD", PriceVersion: "2026-11"}
	b.Run("encode", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendLine(buf[:0], &ev)
		}
	})
	b.Run("encode-compact", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendWALLine(buf[:0], &ev)
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
	b.Run("write", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "wal"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		line := appendLine(nil, &ev)
		for b.Loop() {
			f.Write(line)
		}
	})
	for _, policy := range []SyncPolicy{SyncBatch, SyncAlways} {
		b.Run("group-commit-"+string(policy), func(b *testing.B) { benchGroupCommit(b, policy, &ev) })
	}
	// One caller: each line waits for a write(2) of its own, and the
	// hand-offs to the writer goroutine and back (what a call at c=1 pays
	// twice: for its intent, then for its events).
	b.Run("group-commit-batch-1caller", func(b *testing.B) {
		w := newWAL(b.TempDir(), SyncBatch, func(msg string, err error) { b.Error(msg, err) })
		w.start()
		defer w.close()
		line := appendWALLine(nil, &ev)
		for b.Loop() {
			w.mu.Lock()
			bt := w.appendLocked(line, false)
			w.mu.Unlock()
			bt.wait()
			if w.size.Load() >= walSegmentBytes {
				if old, err := w.rotate(); err == nil && old >= 0 {
					w.remove(old)
				}
			}
		}
	})
}

// benchGroupCommit is what a call does with the WAL under load: append a
// line and wait for the writer to have written it, from 64 goroutines at
// once (a hub with 64 calls in flight); lines/write is the batch the
// writer's one write(2) carried, on average.
func benchGroupCommit(b *testing.B, policy SyncPolicy, ev *Event) {
	w := newWAL(b.TempDir(), policy, func(msg string, err error) { b.Error(msg, err) })
	w.start()
	defer w.close()
	line := appendWALLine(nil, ev)
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.mu.Lock()
			bt := w.appendLocked(line, false)
			w.mu.Unlock()
			bt.wait()
			if w.size.Load() >= walSegmentBytes { // the meter's checkpoint, without the ledger
				if old, err := w.rotate(); err == nil && old >= 0 {
					w.remove(old)
				}
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/float64(max(1, w.writes.Load())), "lines/write")
}
