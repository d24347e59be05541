package billing

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkWALLine splits Record's write-ahead cost: encoding one event,
// the write(2) of its line, and the WAL's append of it (what Record does
// under the WAL's lock, rotating every walSegmentBytes): through the
// mapping, and with pwrite(2) where there is none; append-prefaulted is
// the append a call makes in the hub, into pages the writer prefaulted
// (untimed) ahead of it.
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
	for _, p := range []struct {
		name     string
		mapBytes int64
	}{{"append", walMapBytes}, {"append-pwrite", 0}} {
		b.Run(p.name, func(b *testing.B) {
			w := &wal{dir: b.TempDir(), mapBytes: p.mapBytes, open: map[string]openIntent{}}
			defer w.close()
			line := appendLine(nil, &ev)
			for b.Loop() {
				w.mu.Lock()
				if w.size >= walSegmentBytes { // the writer's checkpoint, without the fsync
					if old, err := w.rotateLocked(); err == nil && old >= 0 {
						w.remove(old)
					}
				}
				err := w.appendLocked(line)
				w.mu.Unlock()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("append-prefaulted", func(b *testing.B) {
		w := &wal{dir: b.TempDir(), mapBytes: walMapBytes, open: map[string]openIntent{}}
		defer w.close()
		line := appendLine(nil, &ev)
		ahead := int64(0) // bytes appended since the last prefault
		for b.Loop() {
			if ahead+int64(len(line)) > walPrefault/2 {
				b.StopTimer()
				w.mu.Lock()
				if w.size >= walSegmentBytes {
					if old, err := w.rotateLocked(); err == nil && old >= 0 {
						w.remove(old)
					}
				}
				w.mu.Unlock()
				w.prefault(walPrefault)
				ahead = 0
				b.StartTimer()
			}
			w.mu.Lock()
			err := w.appendLocked(line)
			w.mu.Unlock()
			if err != nil {
				b.Fatal(err)
			}
			ahead += int64(len(line))
		}
	})
}
