package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/hub"
)

// MeterOptions configure [NewMeter]. A nil *MeterOptions means the defaults.
type MeterOptions struct {
	// Pricer prices the events the middleware builds; nil prices nothing.
	Pricer *Pricer
	// SpillDir holds the spill segments and the write-ahead log; "" means
	// neither: events that find the buffer full, or that the ledger
	// refuses, are dropped and counted in Stats().Dropped, and a killed
	// process loses the events still buffered. Use "<data>/spill/usage".
	SpillDir string
	// Buffer is the in-memory queue between Record and the writer; zero
	// means 65536 events.
	Buffer int
	// Batch is the most events one ledger Append carries; zero means 4096.
	Batch int
	// RetryInterval is how often spilled events are retried while the
	// ledger is down; zero means 5s.
	RetryInterval time.Duration
	// Linger is how long the writer waits for more events after the first
	// of a batch, so a quiet hub writes one transaction per Linger rather
	// than one per call (events are already safe in the WAL); zero means
	// 200ms, negative means no wait. Each SQLite ledger transaction writes
	// its indexes' pages again: with 2,000 events/s recorded, a 20ms linger
	// cost the writer ~12µs of CPU per event more than a 250ms one. Flush
	// and Close do not wait for it.
	Linger time.Duration
	// Sync is when the write-ahead log is fsynced; "" means [SyncBatch].
	// What a call that returned survives under each is in [SyncPolicy].
	Sync SyncPolicy
	// WriteTimeout bounds one ledger Append; zero means 10s.
	WriteTimeout time.Duration
	// Logger; nil means slog.Default(). Now is the clock; nil means time.Now.
	Logger *slog.Logger
	Now    func() time.Time
}

// MeterStats counts what a meter did with the events recorded.
type MeterStats struct {
	Recorded int64 // Record calls
	Written  int64 // events handed to the ledger in a successful Append (duplicates included)
	Spilled  int64 // events written to the spill (buffer full or ledger down)
	Replayed int64 // spilled events later appended to the ledger
	Dropped  int64 // events lost: no spill configured, spill unwritable, or recorded after Close
	Corrupt  int64 // spill or WAL lines skipped because their checksum did not match
	// Recovered counts events found at start in the write-ahead log an
	// earlier process left, handed again to the ledger (duplicates ignored).
	Recovered int64
	// Unknown counts attempt intents found at start without an outcome,
	// turned into attempt events with outcome unknown.
	Unknown int64
	// Open is the number of attempt intents now waiting for their attempt's
	// event (calls at a vendor); it stays near the calls in flight.
	Open int64
	// WALWrites counts the write-ahead log's batches, one write(2) each
	// (Recorded ÷ WALWrites is the lines a batch carried, on average);
	// WALSyncs its fsyncs.
	WALWrites, WALSyncs int64
}

// Meter records usage events off the call path: Record appends the
// event's line to the write-ahead log's pending batch and puts the event
// in a bounded buffer; the log's writer writes each batch with one
// write(2) (fsync per [MeterOptions].Sync), and the meter's middlewares
// let a call go on only once its events are written (see [SyncPolicy]
// for what that survives). A background writer appends batches to the
// ledger and then drops the WAL segments it has committed. When the buffer is full or the ledger fails,
// events go to a durable spill, replayed when the ledger is back, at
// start, and at Close. At start, the WAL an earlier process left is handed
// to the ledger again; the ledger's unique keys make replays harmless.
type Meter struct {
	l     Ledger
	opts  MeterOptions
	log   *slog.Logger
	sp    *spill
	w     *wal
	bufs  sync.Pool // *[]byte line buffers for the WAL
	batch []Event   // the writer's

	q      queue
	full   chan struct{} // a batch's worth is queued (wake events), or a Flush: see collect
	wake   int
	flush  chan chan error
	quit   chan struct{}
	done   chan struct{}
	closed atomic.Bool
	once   sync.Once

	// calls is the number of calls inside Middleware. One alone writes
	// its own lines to the WAL (see wal.appendLocked).
	calls atomic.Int64

	recorded, written, spilled, replayed, dropped, corrupt atomic.Int64
	recovered, unknown                                     atomic.Int64
	down                                                   atomic.Bool
}

// NewMeter starts a meter writing to l. Before it returns, it hands the
// write-ahead log an earlier process left to the ledger (or the spill when
// the ledger fails), turning attempt intents without an outcome into
// attempt events with outcome [OutcomeUnknown]; it replays any other spill
// in the background.
func NewMeter(l Ledger, opts *MeterOptions) (*Meter, error) {
	m := &Meter{l: l}
	if opts != nil {
		m.opts = *opts
	}
	if m.opts.Buffer <= 0 {
		m.opts.Buffer = 65536
	}
	if m.opts.Batch <= 0 {
		m.opts.Batch = 4096
	}
	if m.opts.RetryInterval <= 0 {
		m.opts.RetryInterval = 5 * time.Second
	}
	if m.opts.Linger == 0 {
		m.opts.Linger = 200 * time.Millisecond
	}
	if m.opts.WriteTimeout <= 0 {
		m.opts.WriteTimeout = 10 * time.Second
	}
	if m.opts.Now == nil {
		m.opts.Now = time.Now
	}
	if m.opts.Pricer == nil {
		m.opts.Pricer = NewPricer(nil, nil)
	}
	m.log = m.opts.Logger
	if m.log == nil {
		m.log = slog.Default()
	}
	policy, err := ParseSyncPolicy(string(m.opts.Sync))
	if err != nil {
		return nil, err
	}
	m.opts.Sync = policy
	if m.opts.SpillDir != "" {
		sp, err := openSpill(m.opts.SpillDir)
		if err != nil {
			return nil, err
		}
		m.sp = sp
		m.w = newWAL(m.opts.SpillDir, policy, func(msg string, err error) { m.log.Error(msg, "err", err) })
		if err := m.recoverWAL(); err != nil {
			return nil, err
		}
		m.w.start()
	}
	m.q = queue{limit: m.opts.Buffer, ready: make(chan struct{}, 1)}
	m.full = make(chan struct{}, 1)
	m.wake = max(1, min(m.opts.Batch, m.opts.Buffer/2))
	m.flush = make(chan chan error)
	m.quit = make(chan struct{})
	m.done = make(chan struct{})
	go m.run()
	return m, nil
}

// Record logs ev in the write-ahead log and queues it for the ledger. It
// waits for neither: the log's writer writes the line with the next batch
// (a call metered by [Meter.Middleware] returns only after that), and
// when the buffer is full the event goes to the spill file instead.
// Ingested is set when zero.
func (m *Meter) Record(ev Event) { m.record(ev, false) }

// record is Record; it returns the WAL batch that holds ev's line (nil
// without a WAL). With own, the caller writes the batch (see
// awaitWAL).
func (m *Meter) record(ev Event, own bool) *walBatch {
	m.recorded.Add(1)
	if ev.Ingested.IsZero() {
		ev.Ingested = m.opts.Now()
	}
	if m.closed.Load() {
		m.dropped.Add(1)
		return nil
	}
	if m.w != nil {
		return m.logged(&ev, false, own)
	}
	m.enqueue(ev)
	return nil
}

func (m *Meter) enqueue(ev Event) {
	n, ok := m.q.push(ev)
	if !ok {
		m.toSpill([]Event{ev})
		return
	}
	if n >= m.wake {
		select {
		case m.full <- struct{}{}: // the writer lingers no longer
		default:
		}
	}
}

// queue is the buffer between Record and the writer: blocks of
// queueBlock events, allocated as events come and dropped as the writer
// takes them, up to limit events. It is not a buffered channel because a
// channel allocates all of its slots up front (65536 events are 19 MB),
// and the garbage collector scans every slot on every cycle, queued or
// not: on a hub with one core, that mark took up to 18ms at a time, the
// hub's p99. Nor is it one growing slice: growing copies the whole queue
// under the lock, and a burst would keep its size for good.
type queue struct {
	mu     sync.Mutex
	blocks [][]Event // queued: blocks[0][head:], then the rest whole
	head   int
	n      int
	limit  int
	spare  []Event // a block taken empty, for the next one needed
	// ready holds a token while events are queued; the writer waits on it.
	ready chan struct{}
}

// queueBlock is the number of events in one block of a queue (~74 KB).
const queueBlock = 256

// push queues ev; it reports how many events are queued, or false when
// limit are.
func (q *queue) push(ev Event) (n int, ok bool) {
	q.mu.Lock()
	n = q.n
	if n >= q.limit {
		q.mu.Unlock()
		return n, false
	}
	last := len(q.blocks) - 1
	if last < 0 || len(q.blocks[last]) == queueBlock {
		b := q.spare
		if q.spare = nil; b == nil {
			b = make([]Event, 0, queueBlock)
		}
		q.blocks = append(q.blocks, b)
		last++
	}
	q.blocks[last] = append(q.blocks[last], ev)
	q.n++
	q.mu.Unlock()
	if n == 0 {
		q.signal()
	}
	return n + 1, true
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// len is the number of events queued.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// take moves up to max queued events to the end of batch. When events are
// left, the ready token stays, so the writer comes back for them.
func (q *queue) take(batch []Event, max int) []Event {
	q.mu.Lock()
	for max > 0 && q.n > 0 {
		b := q.blocks[0]
		k := min(max, len(b)-q.head)
		batch = append(batch, b[q.head:q.head+k]...)
		clear(b[q.head : q.head+k]) // the writer's batch holds them now
		q.head += k
		q.n -= k
		max -= k
		if q.head == len(b) {
			q.head = 0
			if len(q.blocks) == 1 {
				q.blocks[0] = b[:0]
			} else {
				q.spare = b[:0]
				q.blocks[0] = nil
				q.blocks = q.blocks[1:]
			}
		}
	}
	left := q.n
	q.mu.Unlock()
	if left > 0 {
		q.signal()
	}
	return batch
}

// logged appends ev to the WAL's pending batch and, for an event, queues
// it while holding the WAL's lock, so that a rotation sees every event of
// the old segment queued or spilled. An intent is only logged and
// remembered as open; an attempt event resolves the open intent with its
// key. It returns the batch to wait on for the line to be written; with
// own, the caller writes it (see awaitWAL).
func (m *Meter) logged(ev *Event, intent, own bool) *walBatch {
	bp, _ := m.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	line := appendWALLine((*bp)[:0], ev)
	w := m.w
	w.mu.Lock()
	b := w.appendLocked(line, own)
	switch {
	case intent:
		w.open[ev.Key] = openIntent{line: slices.Clone(line), seq: w.seq}
	default:
		if len(w.open) > 0 {
			if k, ok := resolvedAttempt(ev); ok {
				delete(w.open, k)
			}
		}
		m.enqueue(*ev)
	}
	w.mu.Unlock()
	*bp = line
	m.bufs.Put(bp)
	return b
}

func (m *Meter) toSpill(evs []Event) {
	if m.sp == nil {
		m.dropped.Add(int64(len(evs)))
		return
	}
	if err := m.sp.write(evs); err != nil {
		m.dropped.Add(int64(len(evs)))
		m.log.Error("usage events lost: spill unwritable", "events", len(evs), "err", err)
		return
	}
	m.spilled.Add(int64(len(evs)))
}

// Flush waits until every event recorded before it is in the ledger or
// the spill (fsynced), then tries to replay the spill. It returns the
// ledger's error if events are still waiting in the spill.
func (m *Meter) Flush(ctx context.Context) error {
	if m.closed.Load() {
		return ErrClosed
	}
	reply := make(chan error, 1)
	select {
	case m.full <- struct{}{}: // the writer lingers no longer
	default:
	}
	select {
	case m.flush <- reply:
	case <-m.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close flushes the buffer, tries a last replay and stops the writer.
// Events still in the spill are replayed by the next meter on the same
// SpillDir. Close does not close the ledger.
func (m *Meter) Close() error {
	var err error
	m.once.Do(func() {
		m.closed.Store(true)
		close(m.quit)
		<-m.done
		// A Record racing with Close may have queued after the writer's
		// last drain: keep those events in the spill (or count them).
		late := m.q.take(nil, m.opts.Buffer)
		if len(late) > 0 {
			m.toSpill(late)
		}
		if m.sp != nil {
			err = m.sp.close()
		}
		if m.w != nil {
			err = errors.Join(err, m.w.close())
		}
	})
	return err
}

// Stats returns the meter's counters.
func (m *Meter) Stats() MeterStats {
	var open, writes, syncs int64
	if m.w != nil {
		m.w.mu.Lock()
		open = int64(len(m.w.open))
		m.w.mu.Unlock()
		writes, syncs = m.w.writes.Load(), m.w.syncs.Load()
	}
	return MeterStats{Open: open, WALWrites: writes, WALSyncs: syncs,
		Recorded: m.recorded.Load(), Written: m.written.Load(), Spilled: m.spilled.Load(),
		Replayed: m.replayed.Load(), Dropped: m.dropped.Load(), Corrupt: m.corrupt.Load(),
		Recovered: m.recovered.Load(), Unknown: m.unknown.Load(),
	}
}

// collect adds queued events to batch until it is full or Linger has
// passed since the first. It sleeps through the linger rather than taking
// events one by one, so recording an event does not wake the writer (a
// goroutine switch, often a thread wake-up, per event on the call path):
// Record wakes it early only when a batch's worth is queued (or half the
// buffer, if smaller), Flush and Close at once.
func (m *Meter) collect(batch []Event) []Event {
	// An event queued after the look below, that makes a batch's worth,
	// leaves a token in m.full: the wait ends at once.
	if m.opts.Linger > 0 && m.q.len() < m.wake {
		linger := time.NewTimer(m.opts.Linger)
		select {
		case <-linger.C:
		case <-m.full:
		case <-m.quit:
		}
		linger.Stop()
	}
	return m.q.take(batch, m.opts.Batch)
}

func (m *Meter) run() {
	defer close(m.done)
	tick := time.NewTicker(m.opts.RetryInterval)
	defer tick.Stop()
	var lastErr error
	m.replay() // what an earlier process left
	for {
		select {
		case <-m.q.ready:
			batch := m.collect(m.batch[:0])
			if len(batch) == 0 {
				continue // drained by a Flush since the token
			}
			m.batch = batch
			lastErr = m.write(batch)
			m.syncSpill()
			if m.walFull() {
				m.checkpoint()
			}
		case reply := <-m.flush:
			if err, wrote := m.drain(); wrote {
				lastErr = err
			}
			m.syncSpill()
			if m.sp != nil && m.sp.pending() {
				lastErr = m.replay()
			}
			m.checkpoint()
			reply <- lastErr
		case <-tick.C:
			m.syncSpill()
			if m.sp != nil && (m.down.Load() || m.sp.pending()) {
				m.replay()
			}
			m.checkpoint()
		case <-m.quit:
			m.drain()
			m.syncSpill()
			if m.sp != nil && m.sp.pending() {
				m.replay()
			}
			m.checkpoint()
			return
		}
	}
}

// drain writes out what the buffer holds now; it returns the error of the
// last ledger write and whether there was one.
func (m *Meter) drain() (lastErr error, wrote bool) {
	for {
		batch := m.q.take(m.batch[:0], m.opts.Batch)
		if len(batch) == 0 {
			return lastErr, wrote
		}
		m.batch = batch
		lastErr, wrote = m.write(batch), true
		if len(batch) < m.opts.Batch {
			return lastErr, true
		}
	}
}

func (m *Meter) walFull() bool {
	return m.w != nil && m.w.size.Load() >= walSegmentBytes
}

// checkpoint retires the current WAL segment: it rotates, writes out the
// buffer (every event of the old segment is in it, or already in the
// ledger or the spill), fsyncs the spill and the new segment (which holds
// the intents still open), and removes the old segment.
func (m *Meter) checkpoint() {
	if m.w == nil {
		return
	}
	old, err := m.w.rotate()
	if old < 0 {
		return
	}
	if err != nil {
		m.log.Error("usage write-ahead log: rotation failed; the old segment is kept for the next start", "err", err)
		return
	}
	m.drain()
	m.syncSpill()
	if err := m.w.sync(); err != nil {
		m.log.Error("usage write-ahead log: fsync failed", "err", err)
	}
	if !m.syncLedger() {
		return // the old segment is replayed at the next start; its keys dedupe
	}
	if err := m.w.remove(old); err != nil {
		m.log.Error("usage write-ahead log: segment not removed", "err", err)
	}
}

// syncLedger makes what the ledger committed survive a power loss before a
// segment holding the same events is deleted (see [Syncer]); false when it
// could not, and the segment must stay.
func (m *Meter) syncLedger() bool {
	s, ok := m.l.(Syncer)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.WriteTimeout)
	defer cancel()
	if err := s.Sync(ctx); err != nil {
		m.log.Error("usage ledger: sync failed; the write-ahead log segment is kept", "err", err)
		return false
	}
	return true
}

// unknownReason is the reason of an attempt event made at recovery from
// an intent.
const unknownReason = "unknown: toolhub stopped before the vendor answered (recovered from the write-ahead log)"

// recoverWAL hands the WAL segments an earlier process left to the ledger:
// its spill first, then the events, then — for each attempt intent with no
// attempt event of the same key — the intent itself, outcome unknown. An
// attempt event that reached the ledger or the spill earlier wins: the
// unknown event with its key is a duplicate the ledger ignores.
func (m *Meter) recoverWAL() error {
	segs, err := m.w.list()
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return nil
	}
	m.w.seq = segs[len(segs)-1] + 1
	if m.sp.pending() {
		_ = m.replay() // on failure m.down is set: what follows goes to the spill, after it
	}
	var evs, intents []Event
	resolved := map[string]bool{}
	for _, seq := range segs {
		got, corrupt, err := readWAL(m.w.segments, seq)
		if err != nil {
			return err
		}
		if corrupt > 0 {
			m.corrupt.Add(int64(corrupt))
			m.log.Warn("usage write-ahead log: corrupt lines skipped", "segment", seq, "lines", corrupt)
		}
		for _, ev := range got {
			switch {
			case ev.Kind == KindAttempt && ev.Outcome == OutcomeUnknown:
				intents = append(intents, ev)
			default:
				if k, ok := resolvedAttempt(&ev); ok {
					resolved[k] = true
				}
				evs = append(evs, ev)
			}
		}
	}
	now := m.opts.Now()
	var unknown []Event
	for _, ev := range intents {
		if resolved[ev.Key] {
			continue
		}
		resolved[ev.Key] = true // an intent carried into a later segment too
		ev.Ingested = now
		if ev.Reason == "" {
			ev.Reason = unknownReason
		}
		unknown = append(unknown, ev)
	}
	m.appendOrSpill(evs)
	m.appendOrSpill(unknown)
	m.syncSpill()
	m.recovered.Add(int64(len(evs)))
	m.unknown.Add(int64(len(unknown)))
	if len(evs)+len(unknown) > 0 {
		m.log.Info("usage write-ahead log recovered", "events", len(evs), "unknown_attempts", len(unknown))
	}
	if len(segs) > 0 && !m.syncLedger() {
		return nil // kept for the next start; their keys dedupe
	}
	for _, seq := range segs {
		if err := m.w.remove(seq); err != nil {
			return err
		}
	}
	return nil
}

// appendOrSpill appends evs to the ledger in batches, in order; once the
// ledger fails (or is known down) the rest goes to the spill, in order.
func (m *Meter) appendOrSpill(evs []Event) {
	for len(evs) > 0 {
		n := min(len(evs), m.opts.Batch)
		if m.down.Load() {
			m.toSpill(evs)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.opts.WriteTimeout)
		err := m.l.Append(ctx, evs[:n])
		cancel()
		if err != nil {
			m.down.Store(true)
			m.log.Warn("usage ledger unwritable: spilling recovered events", "events", len(evs), "err", err)
			m.toSpill(evs)
			return
		}
		m.written.Add(int64(n))
		evs = evs[n:]
	}
}

func (m *Meter) syncSpill() {
	if m.sp == nil {
		return
	}
	if err := m.sp.sync(); err != nil {
		m.log.Error("usage spill: fsync failed", "err", err)
	}
}

// write appends a batch, spilling it if the ledger fails.
func (m *Meter) write(batch []Event) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.WriteTimeout)
	defer cancel()
	if err := m.l.Append(ctx, batch); err != nil {
		if !m.down.Swap(true) {
			m.log.Warn("usage ledger unwritable: spilling events", "events", len(batch), "err", err)
		}
		m.toSpill(batch)
		return err
	}
	m.written.Add(int64(len(batch)))
	if m.down.Swap(false) {
		m.log.Info("usage ledger writable again: replaying the spill")
		return m.replay()
	}
	return nil
}

// replay appends every spilled segment to the ledger, oldest first,
// removing each once it is all in. It stops at the first ledger error.
func (m *Meter) replay() error {
	if m.sp == nil {
		return nil
	}
	segs, err := m.sp.rotate()
	if err != nil {
		return err
	}
	for _, seq := range segs {
		var n int64
		corrupt, err := m.sp.read(seq, m.opts.Batch, func(evs []Event) error {
			ctx, cancel := context.WithTimeout(context.Background(), m.opts.WriteTimeout)
			defer cancel()
			if err := m.l.Append(ctx, evs); err != nil {
				return err
			}
			n += int64(len(evs))
			return nil
		})
		if err != nil {
			m.down.Store(true)
			return fmt.Errorf("billing: replay spill: %w", err)
		}
		m.corrupt.Add(int64(corrupt))
		m.replayed.Add(n)
		if !m.syncLedger() {
			return fmt.Errorf("billing: replay spill: ledger sync failed; segment %d kept", seq)
		}
		if err := m.sp.remove(seq); err != nil {
			return err
		}
		if corrupt > 0 {
			m.log.Warn("usage spill: corrupt lines skipped", "segment", seq, "lines", corrupt)
		}
	}
	m.down.Store(false)
	return nil
}

// noteKey carries a *callNote from the meter's middleware to the budget
// middleware inside it, so a call is priced once.
type noteKey struct{}

type callNote struct {
	charged bool
	charge  Charge

	// The attempt intents logged for the call; once ended (the call's
	// events are recorded) no more are logged: a later attempt with the
	// call's context (a cache's background refresh) is not metered.
	mu      sync.Mutex
	ended   bool
	intents []string
}

// Facts is what the meter and budgets read from a finished call.
type Facts struct {
	Vendor, Tool, Capability string
	// Call is the call's outcome ([hub.OutcomeOf]); Outcome is the same
	// folded into the ledger's vocabulary ([LedgerOutcome]).
	Call    hub.Outcome
	Outcome Outcome
	Reason  string
	Units   Units
}

// CallFacts classifies a finished call: who answered, the outcome and the
// units used (vendor-reported units only for answers a vendor produced now).
func CallFacts(c *hub.Call, r *hub.Result, err error) Facts {
	var f Facts
	if c.Capability != nil {
		f.Capability = c.Capability.Name
	}
	var p hub.Provenance
	if r != nil {
		p = r.Provenance
	}
	f.Vendor, f.Tool = p.Vendor, p.Tool
	if f.Vendor == "" && c.Trace != nil && len(c.Trace.Attempts) > 0 {
		a := c.Trace.Attempts[len(c.Trace.Attempts)-1]
		f.Vendor, f.Tool = a.Vendor, a.Tool
	}
	if f.Vendor == "" && c.Tool != nil {
		f.Vendor, f.Tool = c.Tool.Vendor, c.Tool.Name()
	}
	if f.Tool == "" && f.Vendor == "" && f.Capability == "" {
		f.Tool = c.Name
	}
	f.Call = hub.OutcomeOf(r, err)
	f.Outcome = LedgerOutcome(KindCall, f.Call)
	f.Units = Units{UnitCalls: 1}
	switch f.Call {
	case hub.OutcomeQueued:
		if err == nil && p.JobID != "" {
			f.Reason = "queued as job " + p.JobID
		}
	case hub.OutcomeStale, hub.OutcomeCached:
	case hub.OutcomeToolError:
		f.Reason = "tool reported an error"
		f.Units = UnitsFrom(r.Structured)
	case hub.OutcomeOK, hub.OutcomeFallback:
		if r != nil {
			f.Units = UnitsFrom(r.Structured)
		}
	}
	if err != nil {
		he := hub.AsError(err)
		f.Reason = string(he.Code) + ": " + he.Message
	}
	return f
}

// Middleware meters every call (install it in [hub.Options].Outer, after
// the decision log): one call-outcome event, plus one event per vendor
// attempt in c.Trace.Attempts. Recording never blocks the call.
//
// A call that is queued as a job is charged nothing: its call event has
// outcome queued and reason "queued as job <id>". A run of the job (a call
// whose Meta[MetaJobID] names it, as hub/jobs' workers send it) is metered
// under the job's id: its events carry call id <job id>, their keys derive
// from "<job id>/<run's call id>", except the call event of the run that
// answered (ok, fallback, cached, stale), keyed CallKey(<job id>). So the
// tenant is charged once per job, when its result is produced: a run
// repeated after a crash or a lost lease writes that key again and the
// ledger ignores it; failed runs are charged nothing.
func (m *Meter) Middleware() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			m.calls.Add(1)
			defer m.calls.Add(-1)
			note := &callNote{}
			r, err := next.Invoke(context.WithValue(ctx, noteKey{}, note), c)
			own := m.alone()
			written := m.recordCall(ctx, c, r, err, note, own)
			m.endIntents(note)
			m.awaitWAL(written, own) // the call is acknowledged once its events are in the WAL
			return r, err
		})
	}
}

// MetaJobID is the call meta key under which hub/jobs carries the id of
// the job a call runs for (hub/jobs.MetaJobID): the meter bills a job once.
const MetaJobID = hub.MetaJobID

// eventIDs returns the call id c's events carry and the id their keys
// derive from. For a plain call both are c.ID. For a run of a job (see
// [Meter.Middleware]) the call id is the job's id and the keys derive from
// "<job id>/<run's call id>", so every run's events are distinct and all of
// them are found by the job id.
func eventIDs(c *hub.Call) (callID, run string) {
	if id, ok := c.Meta[MetaJobID].(string); ok && id != "" {
		return id, id + "/" + c.ID
	}
	return c.ID, c.ID
}

// callEventKey is the key of c's call event: for a job's run that produced
// the job's answer (charged outcomes: ok, fallback, cached, stale), the
// job's own CallKey, the same for every run, so a run repeated after a
// crash or a lost lease is a duplicate the ledger ignores.
func callEventKey(callID, run string, out Outcome) string {
	if callID != run {
		switch out {
		case OutcomeOK, OutcomeFallback, OutcomeCached, OutcomeStale:
			return CallKey(callID)
		}
	}
	return CallKey(run)
}

// recordCall records c's events and returns the WAL batch of the last
// (batches are written in order: it is written after the others).
func (m *Meter) recordCall(ctx context.Context, c *hub.Call, r *hub.Result, err error, note *callNote, own bool) *walBatch {
	now := m.opts.Now()
	start := c.Start
	if start.IsZero() {
		start = now
	}
	// Pricing may ask a shared volume counter: the caller leaving after
	// the answer does not stop the call being counted.
	ctx = context.WithoutCancel(ctx)
	f := CallFacts(c, r, err)
	ch := note.charge
	if !note.charged {
		ch = m.opts.Pricer.TenantCharge(ctx, c.Tenant, f.Vendor, f.Tool, start, f.Outcome, f.Units)
	}
	callID, run := eventIDs(c)
	call := Event{
		Key: callEventKey(callID, run, f.Outcome), CallID: callID, Kind: KindCall, Time: start, Ingested: now,
		Tenant: c.Tenant, Vendor: f.Vendor, Tool: f.Tool, Capability: f.Capability,
		Outcome: f.Outcome, Reason: f.Reason, Latency: now.Sub(start), Units: f.Units,
		TenantUnitPrice: ch.UnitPrice, TenantCost: ch.Cost, Currency: ch.Currency, PriceVersion: ch.Version,
	}
	if c.Trace == nil || len(c.Trace.Attempts) == 0 {
		return m.record(call, own)
	}
	// The answering attempt is the last ok one of the answering vendor.
	answer := -1
	if f.Outcome == OutcomeOK || f.Outcome == OutcomeFallback {
		for i := len(c.Trace.Attempts) - 1; i >= 0; i-- {
			if a := c.Trace.Attempts[i]; a.Outcome == hub.OutcomeOK && a.Vendor == f.Vendor {
				answer = i
				break
			}
		}
	}
	var last *walBatch
	for i, a := range c.Trace.Attempts {
		out, reason := LedgerOutcome(KindAttempt, a.Outcome), ""
		if out != OutcomeOK {
			reason = strings.TrimSuffix(string(a.Outcome)+": "+a.Error, ": ")
		}
		units := Units{UnitCalls: 1}
		if i == answer {
			units = f.Units
		}
		pay := m.opts.Pricer.VendorPayout(ctx, a.Vendor, a.Tool, start, out, units)
		att := Event{
			Key: AttemptKey(run, i+1), CallID: callID, Kind: KindAttempt, Attempt: i + 1, Time: start, Ingested: now,
			Tenant: c.Tenant, Vendor: a.Vendor, Tool: a.Tool, Capability: f.Capability,
			Outcome: out, Reason: reason, Latency: time.Duration(a.LatencyMS * float64(time.Millisecond)), Units: units,
			VendorUnitPrice: pay.UnitPrice, VendorCost: pay.Cost, Currency: pay.Currency, PriceVersion: pay.Version,
		}
		if i == 0 {
			// One row for a call and its first attempt when they agree (a
			// single-attempt call that went as the attempt did): see MergeAttempt.
			if merged, ok := MergeAttempt(&call, &att); ok {
				last = m.record(merged, own)
				continue
			}
			m.record(call, own)
		}
		last = m.record(att, own)
	}
	return last
}

// AttemptMiddleware writes an attempt intent to the write-ahead log before
// each vendor attempt: an attempt event with the key the attempt's real
// event will have (AttemptKey(c.ID, n), n counting the call's attempts
// across its chain; for a job's run, see [Meter.Middleware]), outcome
// [OutcomeUnknown] and tenant charge 0. The real event, recorded by
// [Meter.Middleware] when the call ends, resolves it. If toolhub dies before that, the next meter on the same SpillDir
// turns the intent into the attempt's ledger event: the vendor received a
// call toolhub never heard back from.
//
// Its vendor payout follows the price book's rule for attempts that did
// not answer ok (as error and timeout): zero, priced with the book's
// version and currency, units {calls: 1}. toolhub does not pay for work it
// cannot prove; the attempt is in the ledger for reconciliation against
// the vendor's own statement.
//
// Install it innermost in [hub.Options].Vendor, after the governor's
// middleware, so that it runs once per try (retries included) and only for
// tries that reach the vendor:
//
//	Vendor: []hub.Middleware{gov.VendorMiddleware(), meter.AttemptMiddleware()},
//
// Only calls metered by [Meter.Middleware] get intents, and only until
// their events are recorded: an attempt made outside the call (a cache's
// background refresh) gets none, since no event would ever resolve it.
// Without a SpillDir it does nothing.
func (m *Meter) AttemptMiddleware() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			note, _ := ctx.Value(noteKey{}).(*callNote)
			if m.w != nil && note != nil && c.Tool != nil && c.Trace != nil && !m.closed.Load() {
				var written *walBatch
				own := m.alone()
				note.mu.Lock()
				if !note.ended {
					key, b := m.intent(c, len(c.Trace.Attempts)+1, own)
					note.intents, written = append(note.intents, key), b
				}
				note.mu.Unlock()
				m.awaitWAL(written, own) // the vendor hears of the attempt only once its intent is in the WAL
			}
			return next.Invoke(ctx, c)
		})
	}
}

// intent logs the intent of attempt n of c and returns its key and the
// WAL batch that holds it.
func (m *Meter) intent(c *hub.Call, n int, own bool) (string, *walBatch) {
	now := m.opts.Now()
	start := c.Start
	if start.IsZero() {
		start = now
	}
	callID, run := eventIDs(c)
	ev := Event{
		Key: AttemptKey(run, n), CallID: callID, Kind: KindAttempt, Attempt: n, Time: start, Ingested: now,
		Tenant: c.Tenant, Vendor: c.Tool.Vendor, Tool: c.Tool.Def.Name, Outcome: OutcomeUnknown,
		Units: Units{UnitCalls: 1}, // the reason, the same for every intent, is set at recovery
	}
	if c.Capability != nil {
		ev.Capability = c.Capability.Name
	}
	pay := m.opts.Pricer.VendorPayout(context.Background(), ev.Vendor, ev.Tool, start, OutcomeUnknown, ev.Units)
	ev.VendorUnitPrice, ev.VendorCost, ev.Currency, ev.PriceVersion = pay.UnitPrice, pay.Cost, pay.Currency, pay.Version
	return ev.Key, m.logged(&ev, true, own)
}

// alone reports whether the calling call is the only one inside
// Middleware: then it writes its own WAL lines, since no other call's
// could join their batch.
func (m *Meter) alone() bool { return m.calls.Load() <= 1 }

// awaitWAL returns once b's lines are in the WAL. With own (b's lines
// were appended with own), the caller writes the pending batch itself,
// after any batch being written.
func (m *Meter) awaitWAL(b *walBatch, own bool) {
	if own && b != nil {
		m.w.commit()
	}
	b.wait()
}

// endIntents closes a call's intents once its events are recorded: any
// still open belongs to an attempt outside the call's trace, which no event
// will resolve, and is forgotten.
func (m *Meter) endIntents(note *callNote) {
	note.mu.Lock()
	note.ended = true
	keys := note.intents
	note.mu.Unlock()
	if m.w == nil || len(keys) == 0 {
		return
	}
	m.w.mu.Lock()
	for _, k := range keys {
		delete(m.w.open, k)
	}
	m.w.mu.Unlock()
}
