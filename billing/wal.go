package billing

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/toolhub/toolhub/internal/x/jsonenc"
)

// OutcomeUnknown is the outcome of a vendor attempt that started (its
// intent is in the meter's write-ahead log) but whose answer toolhub never
// recorded, because the process died first. The vendor may or may not have
// done the work; see [Meter.AttemptMiddleware].
const OutcomeUnknown Outcome = "unknown"

// walSegmentBytes is the size past which the writer retires the current
// WAL segment at its next checkpoint.
const walSegmentBytes = 1 << 20

// walMapBytes is the size of a segment's shared mapping, and of each
// further stretch mapped when a segment outgrows it: a segment grows past
// walSegmentBytes until the writer's next checkpoint, a batch's linger and
// ledger write later (about 2 MiB more at 5,500 calls/s; more when Record
// outruns the ledger).
const walMapBytes = 8 << 20

// wal is the meter's write-ahead log: append-only segments
// "wal-<seq>.log" in the spill directory, in the spill's line framing
// ("<crc32c, 8 hex> <JSON>\n") around a compact JSON of the event
// (appendWALLine). Record appends each event before it
// returns, so an event survives a kill -9 of the process (the page cache
// outlives it); the writer fsyncs now and then.
//
// On Linux a segment is written through a shared mapping of mapBytes,
// whose blocks are reserved before it is mapped (a page fault with the
// disk full would be SIGBUS): an append is a copy, no system call, into
// the page cache a kill -9 leaves; a segment that outgrows its mapping
// gets the next mapBytes mapped. Where a mapping cannot be had (no
// fallocate, another system) an append is one pwrite(2). A segment no
// longer appended to is cut to its lines; one a process left mapped is
// zero-filled past them, which readWAL skips.
//
// An attempt intent is an attempt event with outcome [OutcomeUnknown],
// written before the upstream call; the attempt's real event, recorded
// when the call ends, has the same key and resolves it.
//
// The writer retires a segment once every event in it is in the ledger or
// the spill: it rotates (under mu, so every event of the old segment is
// already queued or spilled), drains the queue, fsyncs the spill, copies
// the intents still open into the new segment and removes the old one.
type wal struct {
	dir      string
	mapBytes int64 // the size of a segment's mapping; 0: pwrite(2) only

	mu      sync.Mutex
	seq     int                   // current segment number (the file may not exist yet)
	f       *os.File              // nil until the first append to segment seq
	m       []byte                // f's shared mapping, nil when there is none
	mapOff  int64                 // the offset in f of m[0]
	touched int64                 // m's pages below this offset have been written to (touch)
	size    int64                 // bytes appended to f
	total   int64                 // bytes appended to every segment (see prefaultSpan)
	counted int64                 // total at the writer's last prefaultNext
	open    map[string]openIntent // intents without an outcome, by event key
	err     error                 // the last append error, reported once
}

type openIntent struct {
	line []byte
	seq  int
}

func (w *wal) name(seq int) string {
	return filepath.Join(w.dir, fmt.Sprintf("wal-%09d.log", seq))
}

// walSegments lists the WAL segment numbers in dir, oldest first.
func walSegments(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("billing: wal %s: %w", dir, err)
	}
	var out []int
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "wal-")
		n, ok2 := strings.CutSuffix(n, ".log")
		if !ok || !ok2 {
			continue
		}
		if seq, err := strconv.Atoi(n); err == nil {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	return out, nil
}

// appendLocked appends one line to the current segment: a copy into its
// mapping, mapping the next stretch of the file when the line passes the
// end of it, or one pwrite(2) when the segment has no mapping.
func (w *wal) appendLocked(line []byte) error {
	if w.f == nil {
		if err := w.createLocked(); err != nil {
			return err
		}
	}
	end := w.size + int64(len(line))
	if w.m != nil && end > w.mapOff+int64(len(w.m)) {
		w.mapLocked()
	}
	if w.m != nil && end <= w.mapOff+int64(len(w.m)) {
		copy(w.m[w.size-w.mapOff:], line)
		w.size = end
		w.total += int64(len(line))
		return nil
	}
	// No mapping, or a line longer than one: pwrite(2) and mapped copies
	// share the page cache on Linux.
	n, err := w.f.WriteAt(line, w.size)
	w.size += int64(n)
	w.total += int64(n)
	if err != nil {
		return fmt.Errorf("billing: wal: %w", err)
	}
	return nil
}

// createLocked creates segment seq and maps it.
func (w *wal) createLocked() error {
	f, err := os.OpenFile(w.name(w.seq), os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return fmt.Errorf("billing: wal: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("billing: wal: %w", err)
	}
	w.f, w.m, w.size = f, nil, st.Size()
	if w.mapBytes > 0 {
		w.mapLocked()
	}
	return nil
}

// mapLocked maps mapBytes of the current segment from the page holding
// size on, in place of the mapping it has. When that fails (disk full, a
// file system without fallocate, another system) the rest of the segment
// is written with pwrite(2), and nothing is said: appends still work.
func (w *wal) mapLocked() {
	if w.m != nil {
		unmapSegment(w.m) // fails only on arguments a mapping made here cannot have
	}
	w.mapOff = w.size &^ int64(os.Getpagesize()-1)
	w.m, _ = mapSegment(w.f, w.mapOff, w.mapBytes)
	w.touched = 0
}

// walPrefault is the most, and walPrefaultMin the least, that the writer
// prefaults past the last line between batches (see prefaultSpan).
const (
	walPrefault    = 2 << 20
	walPrefaultMin = 64 << 10
)

// prefaultSpan is how far past the last line (at size in the segment) the
// writer prefaults after a batch, when grown bytes of lines came in since
// its last prefault (one linger and ledger write): twice that, so that a
// rate that doubles still finds its pages written to, within
// [walPrefaultMin, walPrefault]; and not past where the segment ends,
// walSegmentBytes and one more batch's lines, since the writer rotates
// it after the batch that fills it (walFull). Before, the writer
// prefaulted walPrefault ahead after every batch, and a segment rotated
// at 1 MiB threw away the 2 MiB of pages past its end that it had paid
// to write to: three pages written to for each page of lines, ~4.5 KB a
// call on the hop bench (a CPU profile had the writing at ~3% of the
// hub's CPU with one client).
func prefaultSpan(size, grown int64) int64 {
	ahead := min(walPrefault, max(walPrefaultMin, 2*grown))
	if size < walSegmentBytes {
		ahead = min(ahead, max(walPrefaultMin, walSegmentBytes+grown-size))
	}
	return ahead
}

// prefaultNext prefaults the current segment as far as prefaultSpan says;
// the writer calls it after each batch and each rotation. When no line
// came in since its last call and no segment is open, it does nothing: an
// idle hub keeps no segment open (each one would cost a checkpoint, with
// its fsyncs, at the next tick).
func (w *wal) prefaultNext() {
	w.mu.Lock()
	grown := w.total - w.counted
	w.counted = w.total
	idle := grown == 0 && w.f == nil
	ahead := prefaultSpan(w.size, grown)
	w.mu.Unlock()
	if !idle {
		w.prefault(ahead)
	}
}

// prefault creates the current segment if no call has yet, and makes the
// next ahead bytes of its mapping resident and writable (see populate),
// so that appends, on the call path, do not take page faults: on a
// virtual machine a fault on a new page of the file cost ~20µs, one every
// three calls. Then it writes to each of those pages (see touch): on this
// project's VM the first write to a page after MADV_POPULATE_WRITE still
// cost ~7µs, in the hypervisor, unseen by the kernel's fault counters.
// Only the writer goroutine calls it, which is also the only one to
// rotate; it populates outside mu (populating changes no byte, and a
// mapping an append replaced meanwhile only makes the call fail).
func (w *wal) prefault(ahead int64) {
	w.mu.Lock()
	if w.f == nil && w.mapBytes > 0 {
		if err := w.createLocked(); err != nil {
			w.mu.Unlock()
			return
		}
	}
	m, from := w.m, w.size-w.mapOff
	w.mu.Unlock()
	if m == nil {
		return
	}
	from &^= int64(os.Getpagesize() - 1)
	if to := min(int64(len(m)), from+ahead); from < to {
		populate(m[from:to])
		w.touch(m, to)
	}
}

// touchPages is how many pages touch writes to per hold of mu: an append
// waits for at most that many first writes.
const touchPages = 4

// touch writes a zero to the first byte of each page of m below to that
// lies wholly past the last line and that it has not written to yet. The
// bytes past the last line are zeros (a new segment, reserved by
// fallocate), so no byte changes; it writes under mu, a few pages at a
// time, so no append copies into a page at the same moment, and it stops
// when m is no longer the segment's mapping.
func (w *wal) touch(m []byte, to int64) {
	page := int64(os.Getpagesize())
	for {
		w.mu.Lock()
		if len(w.m) != len(m) || unsafe.SliceData(w.m) != unsafe.SliceData(m) {
			w.mu.Unlock()
			return
		}
		from := max(w.touched, (w.size-w.mapOff+page-1)&^(page-1))
		end := min(to, from+touchPages*page)
		for off := from; off < end; off += page {
			m[off] = 0
		}
		w.touched = max(w.touched, end)
		w.mu.Unlock()
		if end >= to {
			return
		}
		runtime.Gosched()
	}
}

// closeLocked unmaps the current segment, cuts it to its lines (a mapped
// segment has blocks reserved past them), fsyncs it when asked and closes
// it.
func (w *wal) closeLocked(sync bool) error {
	f, m := w.f, w.m
	w.f, w.m = nil, nil
	var err error
	if m != nil {
		err = unmapSegment(m)
	}
	err = errors.Join(err, f.Truncate(w.size))
	if sync {
		err = errors.Join(err, f.Sync())
	}
	f.Close()
	if err != nil {
		return fmt.Errorf("billing: wal: %w", err)
	}
	return nil
}

// rotate starts a new segment and returns the old one's number (-1 when
// nothing was written to it), with the open intents of older segments
// copied into the new segment.
func (w *wal) rotateLocked() (old int, err error) {
	if w.f == nil {
		return -1, nil
	}
	old = w.seq
	err = w.closeLocked(false)
	w.seq, w.size = w.seq+1, 0
	if err != nil {
		return old, err
	}
	for k, in := range w.open {
		if in.seq > old {
			continue
		}
		if err := w.appendLocked(in.line); err != nil {
			return old, err
		}
		in.seq = w.seq
		w.open[k] = in
	}
	return old, nil
}

// sync fsyncs the current segment. Only the writer goroutine rotates, so
// it may call sync without holding mu across the fsync.
//
// fsync covers what was copied into the mapping: since Linux 2.6.19 a
// write through a shared mapping marks its page-cache page dirty (the
// page is write-protected again once written back), and fsync writes back
// every dirty page of the file; msync(MS_SYNC) is the same fsync of a
// range on Linux. fsync also never touches the mapping, which appends go
// on using meanwhile.
func (w *wal) sync() error {
	w.mu.Lock()
	f := w.f
	w.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("billing: wal: %w", err)
	}
	return nil
}

func (w *wal) remove(seq int) error {
	if err := os.Remove(w.name(seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("billing: wal: %w", err)
	}
	return nil
}

// close closes the current segment, removing it when it is empty.
func (w *wal) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.closeLocked(true)
	if w.size == 0 {
		return w.remove(w.seq)
	}
	return err
}

// readWAL reads a WAL segment: the events, in order, and the number of
// lines skipped as corrupt (a torn write at an OS crash, or at a kill -9
// while a line was being copied). Zeros where a line starts are skipped:
// a segment a process left mapped is zero-filled past its last line, and
// a page an OS crash lost reads as zeros too; a line with a zero in it is
// corrupt.
func readWAL(path string) (evs []Event, corrupt int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("billing: wal: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	for {
		if err := skipZeros(r); err != nil {
			if errors.Is(err, io.EOF) {
				return evs, corrupt, nil
			}
			return evs, corrupt, fmt.Errorf("billing: wal: %w", err)
		}
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if ev, ok := decodeSpillLine(line); ok {
				evs = append(evs, ev)
			} else {
				corrupt++
			}
		}
		if errors.Is(err, io.EOF) {
			return evs, corrupt, nil
		}
		if err != nil {
			return evs, corrupt, fmt.Errorf("billing: wal: %w", err)
		}
	}
}

// skipZeros discards the zero bytes r starts with.
func skipZeros(r *bufio.Reader) error {
	for {
		if _, err := r.Peek(1); err != nil {
			return err
		}
		b, _ := r.Peek(r.Buffered())
		n := len(b) - len(bytes.TrimLeft(b, "\x00"))
		r.Discard(n)
		if n < len(b) {
			return nil
		}
	}
}

// appendLine appends ev as one spill line: checksum, space, JSON,
// newline. The JSON is what encoding/json makes of an Event (same field
// names and value encodings), written by hand.
func appendLine(dst []byte, ev *Event) []byte {
	start := len(dst)
	dst = appendEventJSON(append(dst, "00000000 "...), ev)
	return frame(dst, start)
}

// appendWALLine appends ev as one write-ahead log line: the spill's
// framing around the compact JSON of appendCompactJSON, less than half
// the bytes of appendLine's (~200 against ~460 for an attempt). The WAL is
// written on the call path through a file mapping, and on a virtual
// machine the first write to each page of a mapping is what costs (see
// wal.prefault): fewer bytes a call, fewer pages. An event whose times
// are outside years 1679–2261 (UnixNano holds 1678–2262) gets appendLine's line.
// decodeSpillLine reads both; a toolhub from before the compact lines
// counts them as corrupt, so one must not be started on a WAL this one
// left.
func appendWALLine(dst []byte, ev *Event) []byte {
	if !nanoTime(ev.Time) || !nanoTime(ev.Ingested) {
		return appendLine(dst, ev)
	}
	start := len(dst)
	dst = appendCompactJSON(append(dst, "00000000 "...), ev)
	return frame(dst, start)
}

// frame completes the line that starts at start in dst: the JSON's
// checksum in place of the eight zeros the line starts with, and a
// newline. (The encoders are called directly, not through a function
// value: an event passed to one would escape, and Record would allocate
// it.)
func frame(dst []byte, start int) []byte {
	c := crc32.Checksum(dst[start+9:], castagnoli)
	hex.Encode(dst[start:start+8], []byte{byte(c >> 24), byte(c >> 16), byte(c >> 8), byte(c)})
	return append(dst, '\n')
}

// nanoTime reports whether t is well inside the years UnixNano holds
// (1678-09 to 2262-04), so that it round-trips through it.
func nanoTime(t time.Time) bool {
	y := t.Year()
	return y > 1678 && y < 2262
}

// compactPrefix starts every compact line's JSON; a spill line's starts
// with {"key":.
const compactPrefix = `{"v":2`

// compactEvent is the compact JSON of an event in the WAL: short names,
// zero values left out, times in Unix nanoseconds (ingested as the
// nanoseconds after time), amounts in micros, and the call id left out
// when the key is the call id, a slash and a suffix without one.
type compactEvent struct {
	V          int     `json:"v"`
	Key        string  `json:"k"`
	CallID     *string `json:"c"`
	Kind       Kind    `json:"t"`
	Attempt    int     `json:"n"`
	Time       int64   `json:"ts"`
	Ingested   int64   `json:"in"`
	Tenant     string  `json:"te"`
	Vendor     string  `json:"ve"`
	Tool       string  `json:"to"`
	Capability string  `json:"ca"`
	Outcome    Outcome `json:"o"`
	Reason     string  `json:"r"`
	Latency    int64   `json:"l"`
	Units      Units   `json:"u"`
	TenantUnit int64   `json:"tp"`
	TenantCost int64   `json:"tc"`
	VendorUnit int64   `json:"vp"`
	VendorCost int64   `json:"vc"`
	Currency   string  `json:"cu"`
	Version    string  `json:"pv"`
	Adjusts    string  `json:"a"`
}

// impliedCallID reports whether key is callID, a slash and a suffix
// without a slash, so that the call id can be read off the key.
func impliedCallID(key, callID string) bool {
	n := len(callID)
	return len(key) > n && key[n] == '/' && key[:n] == callID && !strings.Contains(key[n+1:], "/")
}

func appendCompactJSON(b []byte, ev *Event) []byte {
	str := func(b []byte, name, v string) []byte {
		if v == "" {
			return b
		}
		b = append(b, name...)
		return jsonenc.AppendString(b, v, false)
	}
	num := func(b []byte, name string, v int64) []byte {
		if v == 0 {
			return b
		}
		b = append(b, name...)
		return strconv.AppendInt(b, v, 10)
	}
	b = append(b, compactPrefix+`,"k":`...)
	b = jsonenc.AppendString(b, ev.Key, false)
	if !impliedCallID(ev.Key, ev.CallID) {
		b = append(b, `,"c":`...)
		b = jsonenc.AppendString(b, ev.CallID, false)
	}
	b = str(b, `,"t":`, string(ev.Kind))
	b = num(b, `,"n":`, int64(ev.Attempt))
	ts := ev.Time.UnixNano()
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = num(b, `,"in":`, ev.Ingested.UnixNano()-ts)
	b = str(b, `,"te":`, ev.Tenant)
	b = str(b, `,"ve":`, ev.Vendor)
	b = str(b, `,"to":`, ev.Tool)
	b = str(b, `,"ca":`, ev.Capability)
	b = str(b, `,"o":`, string(ev.Outcome))
	b = str(b, `,"r":`, ev.Reason)
	b = num(b, `,"l":`, int64(ev.Latency))
	if ev.Units != nil {
		b = appendUnits(append(b, `,"u":`...), ev.Units)
	}
	b = num(b, `,"tp":`, int64(ev.TenantUnitPrice))
	b = num(b, `,"tc":`, int64(ev.TenantCost))
	b = num(b, `,"vp":`, int64(ev.VendorUnitPrice))
	b = num(b, `,"vc":`, int64(ev.VendorCost))
	b = str(b, `,"cu":`, ev.Currency)
	b = str(b, `,"pv":`, ev.PriceVersion)
	b = str(b, `,"a":`, ev.Adjusts)
	return append(b, '}')
}

// decodeCompact reads appendCompactJSON's JSON.
func decodeCompact(body []byte) (Event, bool) {
	var c compactEvent
	if err := json.Unmarshal(body, &c); err != nil || c.V != 2 {
		return Event{}, false
	}
	ev := Event{
		Key: c.Key, Kind: c.Kind, Attempt: c.Attempt,
		Time: time.Unix(0, c.Time).UTC(), Ingested: time.Unix(0, c.Time+c.Ingested).UTC(),
		Tenant: c.Tenant, Vendor: c.Vendor, Tool: c.Tool, Capability: c.Capability,
		Outcome: c.Outcome, Reason: c.Reason, Latency: time.Duration(c.Latency), Units: c.Units,
		TenantUnitPrice: Micros(c.TenantUnit), TenantCost: Micros(c.TenantCost),
		VendorUnitPrice: Micros(c.VendorUnit), VendorCost: Micros(c.VendorCost),
		Currency: c.Currency, PriceVersion: c.Version, Adjusts: c.Adjusts,
	}
	switch {
	case c.CallID != nil:
		ev.CallID = *c.CallID
	default:
		i := strings.LastIndexByte(c.Key, '/')
		if i < 0 {
			return Event{}, false
		}
		ev.CallID = c.Key[:i]
	}
	return ev, true
}

func appendEventJSON(b []byte, ev *Event) []byte {
	b = append(b, `{"key":`...)
	b = jsonenc.AppendString(b, ev.Key, false)
	b = append(b, `,"call_id":`...)
	b = jsonenc.AppendString(b, ev.CallID, false)
	b = append(b, `,"kind":`...)
	b = jsonenc.AppendString(b, string(ev.Kind), false)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(ev.Attempt), 10)
	b = append(b, `,"time":`...)
	b = appendJSONTime(b, ev.Time)
	b = append(b, `,"ingested":`...)
	b = appendJSONTime(b, ev.Ingested)
	b = append(b, `,"tenant":`...)
	b = jsonenc.AppendString(b, ev.Tenant, false)
	for _, f := range [...]struct{ name, v string }{{`,"vendor":`, ev.Vendor}, {`,"tool":`, ev.Tool}, {`,"capability":`, ev.Capability}} {
		if f.v != "" {
			b = append(b, f.name...)
			b = jsonenc.AppendString(b, f.v, false)
		}
	}
	b = append(b, `,"outcome":`...)
	b = jsonenc.AppendString(b, string(ev.Outcome), false)
	if ev.Reason != "" {
		b = append(b, `,"reason":`...)
		b = jsonenc.AppendString(b, ev.Reason, false)
	}
	b = append(b, `,"latency_ns":`...)
	b = strconv.AppendInt(b, int64(ev.Latency), 10)
	b = append(b, `,"units":`...)
	if ev.Units == nil {
		b = append(b, "null"...)
	} else {
		b = appendUnits(b, ev.Units)
	}
	b = append(b, `,"tenant_unit_price":`...)
	b = appendMicros(b, ev.TenantUnitPrice)
	b = append(b, `,"tenant_cost":`...)
	b = appendMicros(b, ev.TenantCost)
	b = append(b, `,"vendor_unit_price":`...)
	b = appendMicros(b, ev.VendorUnitPrice)
	b = append(b, `,"vendor_cost":`...)
	b = appendMicros(b, ev.VendorCost)
	b = append(b, `,"currency":`...)
	b = jsonenc.AppendString(b, ev.Currency, false)
	if ev.PriceVersion != "" {
		b = append(b, `,"price_version":`...)
		b = jsonenc.AppendString(b, ev.PriceVersion, false)
	}
	if ev.Adjusts != "" {
		b = append(b, `,"adjusts":`...)
		b = jsonenc.AppendString(b, ev.Adjusts, false)
	}
	return append(b, '}')
}

// appendUnits writes u as a JSON object (in map order).
func appendUnits(b []byte, u Units) []byte {
	b = append(b, '{')
	first := true
	for k, v := range u {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = jsonenc.AppendString(b, k, false)
		b = append(b, ':')
		b = strconv.AppendInt(b, v, 10)
	}
	return append(b, '}')
}

// appendMicros writes m as its MarshalText does, quoted: "-1.000020".
func appendMicros(b []byte, m Micros) []byte {
	b = append(b, '"')
	v := uint64(m)
	if m < 0 {
		b = append(b, '-')
		v = -v
	}
	b = strconv.AppendUint(b, v/MicrosPerUnit, 10)
	b = append(b, '.')
	frac := v % MicrosPerUnit
	for d := uint64(MicrosPerUnit / 10); d > 0; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return append(b, '"')
}

// appendJSONTime writes t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
