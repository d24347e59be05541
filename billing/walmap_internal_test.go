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

// walPaths are the two ways a segment is appended to: through a shared
// mapping (Linux), and with write(2) (other systems, or when the blocks
// cannot be reserved: a 1 PiB reservation fails on any disk).
var walPaths = []struct {
	name     string
	mapBytes int64
	mapped   bool // on Linux
}{
	{"mapped", walMapBytes, true},
	{"write", 0, false},
	{"fallocate fails", 1 << 50, false},
}

// appendLedger takes every Append; a meter calls nothing else of it.
type appendLedger struct{ Ledger }

func (appendLedger) Append(context.Context, []Event) error { return nil }

func newTestWAL(t *testing.T, mapBytes int64) *wal {
	t.Helper()
	w := &wal{dir: t.TempDir(), mapBytes: mapBytes, open: map[string]openIntent{}}
	t.Cleanup(func() { w.close() })
	return w
}

func walEvent(i int) Event {
	at := time.Date(2026, 12, 2, 10, 0, 0, i, time.UTC)
	return Event{Key: fmt.Sprintf("c%d/call", i), CallID: fmt.Sprintf("c%d", i), Kind: KindCall, Time: at, Ingested: at,
		Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Outcome: OutcomeOK, Units: Units{UnitCalls: 1}, Currency: "USD"}
}

// appendEvents appends events first..first+n-1 and returns them and the
// bytes their lines take.
func appendEvents(t *testing.T, w *wal, first, n int) (evs []Event, bytes int64) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := first; i < first+n; i++ {
		ev := walEvent(i)
		line := appendLine(nil, &ev)
		if err := w.appendLocked(line); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		bytes += int64(len(line))
	}
	return evs, bytes
}

func checkPath(t *testing.T, w *wal, mapped bool) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if got, want := w.m != nil, mapped && runtime.GOOS == "linux"; got != want {
		t.Errorf("segment mapped = %v, want %v", got, want)
	}
}

func readAll(t *testing.T, path string) []Event {
	t.Helper()
	evs, corrupt, err := readWAL(path)
	if err != nil || corrupt != 0 {
		t.Fatalf("readWAL: %d corrupt, %v", corrupt, err)
	}
	return evs
}

// TestWALKilledSegmentRecovers reads a segment that is still open, as the
// next process does after a kill -9: a mapped segment is preallocated and
// zero-filled past its last line, and the zeros are not a line.
func TestWALKilledSegmentRecovers(t *testing.T) {
	for _, tt := range walPaths {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestWAL(t, tt.mapBytes)
			want, _ := appendEvents(t, w, 0, 100)
			checkPath(t, w, tt.mapped)
			if diff := cmp.Diff(want, readAll(t, w.name(w.seq))); diff != "" {
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
		})
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
		{"write(2) segment", cat(lines...), all, 0},
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
			path := filepath.Join(t.TempDir(), "wal-000000001.log")
			if err := os.WriteFile(path, tt.file, 0o640); err != nil {
				t.Fatal(err)
			}
			got, corrupt, err := readWAL(path)
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

// TestWALAppendPastMapping appends past the end of the mapping, which maps
// the next stretch of the segment (with a mapping shorter than a page, a
// line may not fit in the next one either: it is written with pwrite),
// and past a mapping that cannot be had: nothing is lost or reordered, in
// the live file and after close, which cuts the file to its lines.
func TestWALAppendPastMapping(t *testing.T) {
	page := int64(os.Getpagesize())
	tests := []struct {
		name     string
		mapBytes int64
		fail     bool // the next mapping fails: pwrite from there on
		wantMap  bool
	}{
		{"two pages", 2 * page, false, true},
		{"shorter than a page", 3000, false, true},
		{"next mapping fails", 2 * page, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestWAL(t, tt.mapBytes)
			want, n := appendEvents(t, w, 0, 5)
			checkPath(t, w, true)
			if tt.fail {
				w.mapBytes = 1 << 50
			}
			more, n2 := appendEvents(t, w, 5, 60)
			want, n = append(want, more...), n+n2
			checkPath(t, w, tt.wantMap)
			if n <= 3*tt.mapBytes {
				t.Fatalf("appended %d bytes, want more than 3 mappings of %d", n, tt.mapBytes)
			}
			path := w.name(w.seq)
			if diff := cmp.Diff(want, readAll(t, path)); diff != "" {
				t.Errorf("events read while open (-want +got):\n%s", diff)
			}
			if err := w.close(); err != nil {
				t.Fatal(err)
			}
			checkSize(t, path, n)
			if diff := cmp.Diff(want, readAll(t, path)); diff != "" {
				t.Errorf("events read after close (-want +got):\n%s", diff)
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
	for _, tt := range walPaths {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestWAL(t, tt.mapBytes)
			first, n1 := appendEvents(t, w, 0, 10)
			checkPath(t, w, tt.mapped)
			w.mu.Lock()
			old, err := w.rotateLocked()
			w.mu.Unlock()
			if err != nil || old < 0 {
				t.Fatal(old, err)
			}
			checkSize(t, w.name(old), n1)
			if diff := cmp.Diff(first, readAll(t, w.name(old))); diff != "" {
				t.Errorf("rotated segment (-want +got):\n%s", diff)
			}

			second, n2 := appendEvents(t, w, 10, 7)
			if err := w.sync(); err != nil {
				t.Fatal(err)
			}
			last := w.seq
			if err := w.close(); err != nil {
				t.Fatal(err)
			}
			checkSize(t, w.name(last), n2)
			if diff := cmp.Diff(second, readAll(t, w.name(last))); diff != "" {
				t.Errorf("closed segment (-want +got):\n%s", diff)
			}

			// A segment opened (by rotating the intents of a segment
			// already retired: none) and closed empty is removed.
			w2 := newTestWAL(t, tt.mapBytes)
			w2.mu.Lock()
			err = w2.appendLocked(nil)
			w2.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if err := w2.close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(w2.name(w2.seq)); !os.IsNotExist(err) {
				t.Errorf("empty segment left after close: %v", err)
			}
		})
	}
}

// TestWALConcurrentAppends appends from several goroutines while another
// rotates and fsyncs, as the meter's writer does, with a mapping small
// enough that most segments go past it: every line is in exactly one
// segment, and each goroutine's lines are in its order.
func TestWALConcurrentAppends(t *testing.T) {
	const writers, each = 4, 300
	w := newTestWAL(t, 16<<10)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				ev := walEvent(g*each + i)
				line := appendLine(nil, &ev)
				w.mu.Lock()
				// A segment twice the rotator's size waits for it, so
				// rotations happen however the goroutines are scheduled.
				for w.size >= 40<<10 {
					w.mu.Unlock()
					runtime.Gosched()
					w.mu.Lock()
				}
				err := w.appendLocked(line)
				w.mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
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
			w.mu.Lock()
			full := w.size >= 20<<10
			var err error
			if full {
				_, err = w.rotateLocked()
			}
			w.mu.Unlock()
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

	segs, err := walSegments(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	for _, seq := range segs {
		for _, ev := range readAll(t, w.name(seq)) {
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
		dir := t.TempDir()
		path := filepath.Join(dir, "wal-000000001.log")
		file := slices.Concat(head, []byte("\n"), line, make([]byte, zeros))
		if err := os.WriteFile(path, file, 0o640); err != nil {
			t.Fatal(err)
		}
		evs, _, err := readWAL(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 || !cmp.Equal(evs[len(evs)-1], ev) {
			t.Errorf("last event %v, want %v", evs, ev)
		}
	})
}

// The writer's prefault creates the segment and makes the mapping ahead
// of the last line resident without changing a byte: appends before and
// after it, and a prefault past the mapping's end, read back as written.
func TestWALPrefault(t *testing.T) {
	for _, p := range walPaths {
		t.Run(p.name, func(t *testing.T) {
			w := newTestWAL(t, p.mapBytes)
			if p.mapped {
				w.mapBytes = 64 << 10 // the appends pass the mapping's end: it moves on
			}
			w.prefault(walPrefault)
			w.mu.Lock()
			created := w.f != nil
			w.mu.Unlock()
			if created != (p.mapBytes > 0) {
				t.Fatalf("segment created by prefault: %v, want %v (only where it is mapped or may be)", created, p.mapBytes > 0)
			}
			var want []Event
			for i := range 4 {
				evs, _ := appendEvents(t, w, i*200, 200)
				want = append(want, evs...)
				w.prefault(walPrefault)
			}
			if err := w.close(); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, readAll(t, w.name(w.seq))); d != "" {
				t.Errorf("events read back (-appended +read):\n%s", d)
			}
		})
	}
}

// The writer's prefault writes to every page ahead of the last line (on a
// VM the first write to a page costs microseconds even after populate),
// while calls append: it writes only zeros past the last line, under the
// WAL's lock, so every line reads back as appended, and it stops at a
// mapping that rotation replaced.
func TestWALPrefaultTouchesWhileAppending(t *testing.T) {
	if !walPaths[0].mapped {
		t.Skip("segments are mapped on Linux only")
	}
	for _, mapBytes := range []int64{walMapBytes, 64 << 10} { // the small mapping moves on under the prefault
		t.Run(fmt.Sprint(mapBytes), func(t *testing.T) { prefaultWhileAppending(t, mapBytes) })
	}
}

func prefaultWhileAppending(t *testing.T, mapBytes int64) {
	w := newTestWAL(t, mapBytes)
	w.prefault(walPrefault)
	w.mu.Lock()
	touched := w.touched
	w.mu.Unlock()
	if want := min(mapBytes, walPrefault) - int64(os.Getpagesize()); touched < want {
		t.Fatalf("prefault wrote to the mapping up to %d, want at least %d", touched, want)
	}
	var (
		want []Event
		wg   sync.WaitGroup
	)
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				w.prefault(walPrefault)
			}
		}
	})
	for i := range 40 {
		evs, _ := appendEvents(t, w, i*100, 100)
		want = append(want, evs...)
	}
	close(stop)
	wg.Wait()
	// Read as the next process does after a kill -9 (the pages prefault
	// wrote to are in the file), then after a close.
	if d := cmp.Diff(want, readAll(t, w.name(w.seq))); d != "" {
		t.Errorf("events read back from the open segment (-appended +read):\n%s", d)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, readAll(t, w.name(w.seq))); d != "" {
		t.Errorf("events read back (-appended +read):\n%s", d)
	}
}

// TestPrefaultSpan: twice the lines of the last batch, within
// [walPrefaultMin, walPrefault], and not past the end of a segment that is
// about to be rotated.
func TestPrefaultSpan(t *testing.T) {
	const kb = 1 << 10
	for _, tt := range []struct {
		size, grown, want int64
	}{
		{0, 0, walPrefaultMin},
		{100 * kb, 10 * kb, walPrefaultMin},
		{100 * kb, 300 * kb, 600 * kb},
		{0, 4 << 20, walPrefault},
		{900 * kb, 300 * kb, walSegmentBytes + 300*kb - 900*kb}, // the segment ends a batch past 1 MiB
		{walSegmentBytes - 10*kb, 0, walPrefaultMin},
		{walSegmentBytes, 300 * kb, 600 * kb}, // past its size (a rotation failed): as if no end
		{3 * walSegmentBytes, 2 << 20, walPrefault},
	} {
		if got := prefaultSpan(tt.size, tt.grown); got != tt.want {
			t.Errorf("prefaultSpan(%d, %d) = %d, want %d", tt.size, tt.grown, got, tt.want)
		}
	}
}

// TestMeterPrefaultsWhatTheRateNeeds: after a batch the writer has written
// to the pages the next batch's lines need, and not to 2 MiB past them (a
// segment rotated at 1 MiB threw that away: three pages written to for
// each one used).
func TestMeterPrefaultsWhatTheRateNeeds(t *testing.T) {
	if !walPaths[0].mapped {
		t.Skip("segments are mapped on Linux only")
	}
	// No tick: only batches (and the Flush below) move the writer.
	m, err := NewMeter(&appendLedger{}, &MeterOptions{SpillDir: t.TempDir(), Linger: -1, RetryInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const n = 200
	for i := range n {
		m.Record(walEvent(i))
	}
	// The writer prefaults right after writing a batch, in the same turn of
	// its loop; a Flush is served in a later turn. So once the batches are
	// written, a Flush returns after their prefaults. (Its checkpoint
	// rotates the segment, which leaves the old mapping's touched mark and
	// the bytes appended as they were.)
	for deadline := time.Now().Add(10 * time.Second); m.Stats().Written < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events written", m.Stats().Written, n)
		}
	}
	if err := m.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	m.w.mu.Lock()
	size, ahead := m.w.total, m.w.touched-(m.w.total-m.w.mapOff)
	m.w.mu.Unlock()
	page := int64(os.Getpagesize())
	if most := max(walPrefaultMin, 2*size) + page; ahead < walPrefaultMin-page || ahead > most {
		t.Errorf("after %d bytes of lines the writer wrote to %d bytes past them, want %d to %d", size, ahead, walPrefaultMin, most)
	}
}
