package billing

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/internal/x/jsonenc"
)

// OutcomeUnknown is the outcome of a vendor attempt that started (its
// intent is in the meter's write-ahead log) but whose answer toolhub never
// recorded, because the process died first. The vendor may or may not have
// done the work; see [Meter.AttemptMiddleware].
const OutcomeUnknown Outcome = "unknown"

// SyncPolicy is when the write-ahead log's writer fsyncs
// ([MeterOptions].Sync, config meter.sync).
type SyncPolicy string

const (
	// SyncBatch (the default) writes each batch with one write(2) and
	// fsyncs at checkpoints. A call the meter has let return survives a
	// kill -9 of toolhub (its events are in the page cache, which the
	// process does not take with it), but a power loss or kernel crash
	// can lose the events written since the last checkpoint: at most
	// RetryInterval (5s) old, or one WAL segment (1 MiB).
	SyncBatch SyncPolicy = "batch"
	// SyncAlways fsyncs each batch before any call in it returns: a call
	// the meter has let return survives a power loss too (as far as the
	// disk honours cache flushes). The calls in one batch share the fsync.
	SyncAlways SyncPolicy = "always"
)

// ParseSyncPolicy reads a meter.sync value; "" is [SyncBatch].
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch SyncPolicy(s) {
	case "", SyncBatch:
		return SyncBatch, nil
	case SyncAlways:
		return SyncAlways, nil
	}
	return "", fmt.Errorf("billing: meter sync %q: want batch or always", s)
}

// walSegmentBytes is the size past which the writer retires the current
// WAL segment at its next checkpoint.
const walSegmentBytes = 1 << 20

// walSpareBytes is the largest batch buffer the WAL keeps for the next
// batch; a burst's bigger buffer is left to the garbage collector.
const walSpareBytes = 1 << 20

// wal is the meter's write-ahead log: append-only segments
// "wal-<seq>.log" in the spill directory, in the spill's framing
// (frame.go) around a compact JSON of the event (appendWALLine).
//
// It is a group commit. A call appends its line to the pending batch (a
// copy under mu, no system call) and gets the batch back; the log's
// writer goroutine takes the whole pending batch at once, writes it with
// one write(2) (and, with [SyncAlways], one fsync) and then releases
// every call waiting on it. While it writes, the next batch fills, so
// the more calls in flight, the more lines per write(2). A call alone
// in the meter writes its batch itself instead (appendLocked's own).
// Batches are written in the order they were taken: a call that waits
// for its batch knows every line appended before it is written too.
//
// An attempt intent is an attempt event with outcome [OutcomeUnknown],
// written before the upstream call; the attempt's real event, recorded
// when the call ends, has the same key and resolves it.
//
// The meter's writer retires a segment once every event in it is in the
// ledger or the spill: it rotates (under mu, so every event of the old
// segment is already queued or spilled), drains the queue, fsyncs the
// spill, copies the intents still open into the new segment and removes
// the old one.
type wal struct {
	segments
	policy SyncPolicy

	mu      sync.Mutex
	seq     int                   // current segment number (the file may not exist yet)
	pending []byte                // lines not yet handed to write(2)
	batch   *walBatch             // the batch pending's lines are written with
	open    map[string]openIntent // intents without an outcome, by event key
	kick    chan struct{}         // holds a token while pending has lines
	closed  bool                  // no writer: appends are not written

	// wmu is held by whoever writes a batch or rotates, so batches are
	// written in order and never into a segment being closed.
	wmu   sync.Mutex
	f     *os.File // nil until the first write to segment seq
	spare []byte   // the last batch's buffer, for the one after the next
	size  atomic.Int64
	err   error // the last write error, reported once
	log   func(msg string, err error)

	writes, syncs atomic.Int64 // batches written (one write(2) each), fsyncs

	quit chan struct{}
	done chan struct{}
}

// walBatch is one group of lines written together; done closes once
// they are (or once writing them failed).
type walBatch struct {
	done chan struct{}
}

func newWALBatch() *walBatch { return &walBatch{done: make(chan struct{})} }

// unwritten is the batch of a line appended after close: nothing waits.
var unwritten = func() *walBatch {
	b := newWALBatch()
	close(b.done)
	return b
}()

// wait returns once the batch's lines are written.
func (b *walBatch) wait() {
	if b != nil {
		<-b.done
	}
}

type openIntent struct {
	line []byte
	seq  int
}

// newWAL returns the WAL of dir; start starts its writer.
func newWAL(dir string, policy SyncPolicy, log func(string, error)) *wal {
	return &wal{
		segments: segments{kind: "wal", dir: dir, prefix: "wal-", suffix: ".log"},
		policy:   policy, open: map[string]openIntent{}, batch: newWALBatch(),
		kick: make(chan struct{}, 1), log: log,
	}
}

// start runs the writer goroutine until close.
func (w *wal) start() {
	w.quit, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.kick:
				// Let the calls already runnable (those the last batch
				// released, above all) append first: one scheduling round,
				// no timer, and nothing to wait for when none are.
				runtime.Gosched()
				w.commit()
			case <-w.quit:
				return
			}
		}
	}()
}

// appendLocked adds line to the pending batch and returns that batch
// (wait for it with walBatch.wait). The writer goroutine writes it,
// unless own: then the caller writes the batch itself with commit, and
// must. A lone call does (see [Meter.Middleware]): no other call's line
// could join its batch, and a hand-off to the writer would cost it a
// goroutine switch each way, often a thread's wake-up.
func (w *wal) appendLocked(line []byte, own bool) *walBatch {
	if w.closed {
		return unwritten // a call racing with Close: its event is queued or spilled, not logged
	}
	if len(w.pending) == 0 && !own {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	w.pending = append(w.pending, line...)
	return w.batch
}

// takeLocked takes the pending batch, leaving an empty one.
func (w *wal) takeLocked() (buf []byte, b *walBatch) {
	buf, b = w.pending, w.batch
	if len(buf) == 0 {
		return nil, nil
	}
	w.pending, w.spare = w.spare[:0], nil
	w.batch = newWALBatch()
	return buf, b
}

// commit writes the pending batch and releases its waiters.
func (w *wal) commit() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	buf, b := w.takeLocked()
	seq := w.seq
	w.mu.Unlock()
	if b == nil {
		return
	}
	w.writeLocked(seq, buf, w.policy == SyncAlways)
	close(b.done)
}

// writeLocked writes buf at the end of the current segment with one
// write(2), creating the segment first if needed, and fsyncs it when
// asked. A failed write is cut off again (so the next batch does not
// start inside a torn line) and reported once until a write works; the
// calls waiting on the batch go on (their events still reach the ledger
// through the queue, but would not survive a kill).
func (w *wal) writeLocked(seq int, buf []byte, fsync bool) {
	err := w.writeFile(seq, buf, fsync)
	if cap(buf) <= walSpareBytes {
		w.mu.Lock()
		w.spare = buf[:0]
		w.mu.Unlock()
	}
	switch {
	case err != nil && w.err == nil:
		w.log("usage write-ahead log unwritable: events are only buffered until it works again", err)
		w.err = err
	case err == nil:
		w.err = nil
	}
}

// writeFile writes buf to segment seq, which is the open one if any.
func (w *wal) writeFile(seq int, buf []byte, fsync bool) error {
	if w.f == nil {
		f, err := os.OpenFile(w.name(seq), os.O_CREATE|os.O_RDWR, 0o640)
		if err != nil {
			return fmt.Errorf("billing: wal: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("billing: wal: %w", err)
		}
		w.f = f
		w.size.Store(st.Size())
	}
	at := w.size.Load()
	if _, err := w.f.WriteAt(buf, at); err != nil {
		_ = w.f.Truncate(at)
		return fmt.Errorf("billing: wal: %w", err)
	}
	w.size.Store(at + int64(len(buf)))
	w.writes.Add(1)
	if fsync {
		w.syncs.Add(1)
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("billing: wal: %w", err)
		}
	}
	return nil
}

func (w *wal) seqNow() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// rotate writes the pending batch to the current segment, closes it and
// starts a new one (under mu, so that every event in the old segment is
// already queued or spilled), with the open intents of older segments
// copied into the new one's pending batch. It returns the old segment's
// number, -1 when nothing was written to it.
func (w *wal) rotate() (old int, err error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	buf, b := w.takeLocked()
	if w.f == nil && b == nil {
		w.mu.Unlock()
		return -1, nil
	}
	old = w.seq
	w.seq++
	for k, in := range w.open {
		if in.seq > old {
			continue
		}
		w.appendLocked(in.line, false)
		in.seq = w.seq
		w.open[k] = in
	}
	w.mu.Unlock()
	if b != nil {
		w.writeLocked(old, buf, w.policy == SyncAlways)
		err = w.err
		close(b.done)
	}
	if w.f != nil {
		err = errors.Join(err, w.f.Close())
		w.f = nil
	}
	w.size.Store(0)
	if err != nil {
		return old, fmt.Errorf("billing: wal: %w", err)
	}
	return old, nil
}

// sync writes the pending batch and fsyncs the current segment. Only the
// meter's writer goroutine rotates and closes, and it is the one to call
// sync, so the segment stays open across the fsync without wmu held:
// batches go on being written meanwhile.
//
// fsync writes back every dirty page of the file, whatever write(2)
// dirtied it.
func (w *wal) sync() error {
	w.commit()
	w.wmu.Lock()
	f := w.f
	w.wmu.Unlock()
	if f == nil {
		return nil
	}
	w.syncs.Add(1)
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("billing: wal: %w", err)
	}
	return nil
}

// close stops the writer, writes what is pending and closes the current
// segment (fsynced), removing it when it is empty.
func (w *wal) close() error {
	if w.quit != nil {
		close(w.quit)
		<-w.done
		w.quit = nil
	}
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.commit()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.f == nil {
		return nil
	}
	f := w.f
	w.f = nil
	err := errors.Join(f.Sync(), f.Close())
	if w.size.Load() == 0 {
		return w.remove(w.seqNow())
	}
	if err != nil {
		return fmt.Errorf("billing: wal: %w", err)
	}
	return nil
}

// readWAL reads a WAL segment: the events, in order, and the number of
// lines skipped as corrupt (a torn write at an OS crash, or a write a
// kill -9 cut short).
func readWAL(s segments, seq int) (evs []Event, corrupt int, err error) {
	corrupt, err = s.read(seq, func(ev Event) error {
		evs = append(evs, ev)
		return nil
	})
	return evs, corrupt, err
}

// appendWALLine appends ev as one write-ahead log line: the spill's
// framing around the compact JSON of appendCompactJSON, less than half
// the bytes of appendLine's (~200 against ~460 for an attempt): fewer
// bytes to copy on the call path and to write. An event whose times are
// outside years 1679–2261 (UnixNano holds 1678–2262) gets appendLine's
// line. decodeLine reads both; a toolhub from before the compact lines
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
	AttemptLat int64   `json:"al"`
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
	b = num(b, `,"al":`, int64(ev.AttemptLatency))
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
		Currency: c.Currency, PriceVersion: c.Version, Adjusts: c.Adjusts, AttemptLatency: time.Duration(c.AttemptLat),
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
	if ev.AttemptLatency != 0 {
		b = append(b, `,"attempt_latency_ns":`...)
		b = strconv.AppendInt(b, int64(ev.AttemptLatency), 10)
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
