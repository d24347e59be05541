package billing

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// appendLedger takes every Append; a meter calls nothing else of it.
type appendLedger struct{ Ledger }

func (appendLedger) Append(context.Context, []Event) error { return nil }

// newTestWAL returns a WAL in a new directory with its writer running.
func newTestWAL(t *testing.T, policy SyncPolicy) *wal {
	t.Helper()
	w := newWAL(t.TempDir(), policy, func(msg string, err error) { t.Errorf("%s: %v", msg, err) })
	w.start()
	t.Cleanup(func() { w.close() })
	return w
}

func walEvent(i int) Event {
	at := time.Date(2026, 12, 2, 10, 0, 0, i, time.UTC)
	return Event{Key: fmt.Sprintf("c%d/call", i), CallID: fmt.Sprintf("c%d", i), Kind: KindCall, Time: at, Ingested: at,
		Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Outcome: OutcomeOK, Units: Units{UnitCalls: 1}, Currency: "USD"}
}

// appendEvents appends events first..first+n-1, waits until they are
// written and returns them and the bytes their lines take.
func appendEvents(t *testing.T, w *wal, first, n int) (evs []Event, bytes int64) {
	t.Helper()
	var last *walBatch
	w.mu.Lock()
	for i := first; i < first+n; i++ {
		ev := walEvent(i)
		line := appendLine(nil, &ev)
		last = w.appendLocked(line, false)
		evs = append(evs, ev)
		bytes += int64(len(line))
	}
	w.mu.Unlock()
	last.wait()
	return evs, bytes
}

func readAll(t *testing.T, w *wal, seq int) []Event {
	t.Helper()
	evs, corrupt, err := readWAL(w.segments, seq)
	if err != nil || corrupt != 0 {
		t.Fatalf("readWAL: %d corrupt, %v", corrupt, err)
	}
	return evs
}

// TestWALKilledSegmentRecovers reads a segment that is still open, as the
// next process does after a kill -9: every line a waiter was released
// for is in the file, and a new meter recovers them all.
func TestWALKilledSegmentRecovers(t *testing.T) {
	w := newTestWAL(t, SyncBatch)
	want, _ := appendEvents(t, w, 0, 100)
	if diff := cmp.Diff(want, readAll(t, w, w.seqNow())); diff != "" {
		t.Errorf("events read (-want +got):\n%s", diff)
	}
	m, err := NewMeter(&appendLedger{}, &MeterOptions{SpillDir: w.dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if s := m.Stats(); s.Recovered != int64(len(want)) || s.Corrupt != 0 {
		t.Errorf("recovery stats %+v, want %d recovered, 0 corrupt", s, len(want))
	}
}

// TestWALGroupCommit holds the writer while lines pile up, as a write(2)
// in progress does: every line appended meanwhile goes out in the one
// next write, and no waiter is released before its line is written.
func TestWALGroupCommit(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncBatch, SyncAlways} {
		t.Run(string(policy), func(t *testing.T) {
			w := newTestWAL(t, policy)
			w.wmu.Lock() // the writer is busy
			const n = 50
			var batches []*walBatch
			var want []Event
			for i := range n {
				ev := walEvent(i)
				w.mu.Lock()
				batches = append(batches, w.appendLocked(appendWALLine(nil, &ev), false))
				w.mu.Unlock()
				want = append(want, ev)
			}
			for _, b := range batches {
				select {
				case <-b.done:
					t.Fatal("a waiter released before its line was written")
				default:
				}
			}
			w.wmu.Unlock()
			for _, b := range batches {
				b.wait()
			}
			if got := w.writes.Load(); got != 1 {
				t.Errorf("%d writes for %d lines appended during one, want 1", got, n)
			}
			wantSyncs := int64(0)
			if policy == SyncAlways {
				wantSyncs = 1
			}
			if got := w.syncs.Load(); got != wantSyncs {
				t.Errorf("%d fsyncs with sync %s, want %d", got, policy, wantSyncs)
			}
			if diff := cmp.Diff(want, readAll(t, w, w.seqNow())); diff != "" {
				t.Errorf("events read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseSyncPolicy reads meter.sync's values and refuses others.
func TestParseSyncPolicy(t *testing.T) {
	for in, want := range map[string]SyncPolicy{"": SyncBatch, "batch": SyncBatch, "always": SyncAlways} {
		if got, err := ParseSyncPolicy(in); err != nil || got != want {
			t.Errorf("ParseSyncPolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"Always", "never", "fsync"} {
		if _, err := ParseSyncPolicy(in); err == nil {
			t.Errorf("ParseSyncPolicy(%q): no error", in)
		}
	}
	if _, err := NewMeter(&appendLedger{}, &MeterOptions{Sync: "sometimes"}); err == nil {
		t.Error("NewMeter with sync \"sometimes\": no error")
	}
}

// TestReadWALZeroPadding reads the files a killed process (or an OS crash)
// can leave: lines, then zeros up to the preallocated size.
func TestReadWALZeroPadding(t *testing.T) {
	var lines [][]byte
	var all []Event
	for i := range 3 {
		ev := walEvent(i)
		all = append(all, ev)
		lines = append(lines, appendLine(nil, &ev))
	}
	zeros := make([]byte, 5000)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name        string
		file        []byte
		want        []Event
		wantCorrupt int
	}{
		{"segment", cat(lines...), all, 0},
		{"zeros after the last line", cat(lines[0], lines[1], lines[2], zeros), all, 0},
		{"all zeros", zeros, nil, 0},
		{"torn line then zeros", cat(lines[0], lines[1], lines[2][:40], zeros), all[:2], 1},
		{"torn line, its head not copied yet", cat(lines[0], zeros[:40], lines[1][40:], zeros), all[:1], 1},
		{"a page lost in an OS crash, the next one kept", cat(lines[0], lines[1][:30], zeros[:200], lines[1][230:], lines[2], zeros), []Event{all[0], all[2]}, 1},
		{"torn line without zeros", cat(lines[0], lines[1][:40]), all[:1], 1},
		{"empty line", cat(lines[0], []byte("\n"), lines[1]), all[:2], 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestWAL(t, SyncBatch)
			if err := os.WriteFile(w.name(1), tt.file, 0o640); err != nil {
				t.Fatal(err)
			}
			got, corrupt, err := readWAL(w.segments, 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if corrupt != tt.wantCorrupt {
				t.Errorf("%d corrupt lines, want %d", corrupt, tt.wantCorrupt)
			}
		})
	}
}

func checkSize(t *testing.T, path string, want int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != want {
		t.Errorf("%s holds %d bytes, want the %d appended", filepath.Base(path), st.Size(), want)
	}
}

// TestWALSegmentSizeAfterClose checks that a segment no longer appended to
// (rotated, or closed) holds exactly its lines, and that an empty one is
// removed.
func TestWALSegmentSizeAfterClose(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncBatch, SyncAlways} {
		t.Run(string(policy), func(t *testing.T) {
			w := newTestWAL(t, policy)
			first, n1 := appendEvents(t, w, 0, 10)
			old, err := w.rotate()
			if err != nil || old < 0 {
				t.Fatal(old, err)
			}
			checkSize(t, w.name(old), n1)
			if diff := cmp.Diff(first, readAll(t, w, old)); diff != "" {
				t.Errorf("rotated segment (-want +got):\n%s", diff)
			}

			second, n2 := appendEvents(t, w, 10, 7)
			if err := w.sync(); err != nil {
				t.Fatal(err)
			}
			last := w.seqNow()
			if err := w.close(); err != nil {
				t.Fatal(err)
			}
			checkSize(t, w.name(last), n2)
			if diff := cmp.Diff(second, readAll(t, w, last)); diff != "" {
				t.Errorf("closed segment (-want +got):\n%s", diff)
			}

			// A segment opened (by rotating the intents of a segment
			// already retired: none) and closed empty is removed.
			w2 := newTestWAL(t, policy)
			w2.mu.Lock()
			w2.appendLocked(nil, false)
			w2.mu.Unlock()
			if err := w2.close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(w2.name(w2.seqNow())); !os.IsNotExist(err) {
				t.Errorf("empty segment left after close: %v", err)
			}
		})
	}
}

// TestWALConcurrentAppends appends from several goroutines, each waiting
// for its line to be written as a call does, while another rotates and
// fsyncs, as the meter's writer does: every line is in exactly one
// segment, and each goroutine's lines are in its order.
func TestWALConcurrentAppends(t *testing.T) {
	const writers, each = 4, 300
	w := newTestWAL(t, SyncBatch)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				ev := walEvent(g*each + i)
				line := appendLine(nil, &ev)
				// A segment twice the rotator's size waits for it, so
				// rotations happen however the goroutines are scheduled.
				for w.size.Load() >= 40<<10 {
					runtime.Gosched()
				}
				w.mu.Lock()
				b := w.appendLocked(line, false)
				w.mu.Unlock()
				b.wait()
			}
		})
	}
	stop := make(chan struct{})
	rotated := make(chan struct{})
	go func() {
		defer close(rotated)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if w.size.Load() >= 20<<10 {
				_, err = w.rotate()
			}
			if err == nil {
				err = w.sync()
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-rotated
	if err := w.close(); err != nil {
		t.Fatal(err)
	}

	segs, err := w.list()
	if err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	for _, seq := range segs {
		for _, ev := range readAll(t, w, seq) {
			var i int
			fmt.Sscanf(ev.CallID, "c%d", &i)
			if g := i / each; i != g*each+next[g] {
				t.Fatalf("segment %d: event %d after writer %d's %d", seq, i, g, next[g]-1)
			} else {
				next[g]++
			}
		}
	}
	for g, n := range next {
		if n != each {
			t.Errorf("writer %d: %d events in the WAL, want %d", g, n, each)
		}
	}
	if len(segs) < 3 {
		t.Errorf("%d segments, want several rotations", len(segs))
	}
}

// FuzzReadWAL: whatever a segment holds, readWAL does not fail, and a
// line that starts after a newline is read whatever precedes it and
// whatever zeros follow it.
func FuzzReadWAL(f *testing.F) {
	ev := walEvent(1)
	line := appendLine(nil, &ev)
	f.Add([]byte{}, 0)
	f.Add(line, 4096)
	f.Add(line[:20], 3)
	f.Add([]byte("\x00\x00x\n\x00"), 1)
	f.Add(append([]byte("\x00\x00"), line[9:]...), 0)
	f.Fuzz(func(t *testing.T, head []byte, zeros int) {
		zeros = min(max(zeros, 0), 1<<16)
		s := segments{kind: "wal", dir: t.TempDir(), prefix: "wal-", suffix: ".log"}
		file := slices.Concat(head, []byte("\n"), line, make([]byte, zeros))
		if err := os.WriteFile(s.name(1), file, 0o640); err != nil {
			t.Fatal(err)
		}
		evs, _, err := readWAL(s, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 || !cmp.Equal(evs[len(evs)-1], ev) {
			t.Errorf("last event %v, want %v", evs, ev)
		}
	})
}

// TestWALAppendAfterClose: a call racing with Close does not wait for a
// writer that is gone.
func TestWALAppendAfterClose(t *testing.T) {
	w := newTestWAL(t, SyncBatch)
	appendEvents(t, w, 0, 3)
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	ev := walEvent(3)
	w.mu.Lock()
	b := w.appendLocked(appendWALLine(nil, &ev), false)
	w.mu.Unlock()
	select {
	case <-b.done:
	default:
		t.Fatal("a line appended after close waits for a writer that stopped")
	}
}

// TestWALUnwritable: when a segment cannot be written, the calls waiting
// on the batch still go on, the error is logged once (not once a batch),
// and the log writes again once it can.
func TestWALUnwritable(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	var logged []error
	w := newWAL(notDir, SyncBatch, func(msg string, err error) { logged = append(logged, err) })
	w.start()
	defer w.close()
	for i := range 3 {
		ev := walEvent(i)
		w.mu.Lock()
		b := w.appendLocked(appendWALLine(nil, &ev), false)
		w.mu.Unlock()
		b.wait() // returns: the write failed
	}
	if len(logged) != 1 {
		t.Fatalf("%d errors logged for 3 failed batches, want 1: %v", len(logged), logged)
	}
	w.wmu.Lock()
	w.segments.dir = dir // writable again
	w.wmu.Unlock()
	want, _ := appendEvents(t, w, 3, 2)
	if diff := cmp.Diff(want, readAll(t, w, w.seqNow())); diff != "" {
		t.Errorf("events once writable (-want +got):\n%s", diff)
	}
}
