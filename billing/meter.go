package billing

import (
	"context"
	"fmt"
	"log/slog"
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
	// SpillDir holds the spill segments; "" means no spill: events that
	// find the buffer full, or that the ledger refuses, are dropped and
	// counted in Stats().Dropped. Use "<data>/spill/usage".
	SpillDir string
	// Buffer is the in-memory queue between Record and the writer; zero
	// means 65536 events.
	Buffer int
	// Batch is the most events one ledger Append carries; zero means 4096.
	Batch int
	// RetryInterval is how often spilled events are retried while the
	// ledger is down; zero means 5s.
	RetryInterval time.Duration
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
	Corrupt  int64 // spill lines skipped because their checksum did not match
}

// Meter records usage events without blocking calls: Record puts an event
// in a bounded buffer; a background writer appends batches to the ledger.
// When the buffer is full or the ledger fails, events go to a durable
// spill, replayed when the ledger is back, at start, and at Close; the
// ledger's unique keys make replays harmless.
type Meter struct {
	l    Ledger
	opts MeterOptions
	log  *slog.Logger
	sp   *spill

	ch     chan Event
	flush  chan chan error
	quit   chan struct{}
	done   chan struct{}
	closed atomic.Bool
	once   sync.Once

	recorded, written, spilled, replayed, dropped, corrupt atomic.Int64
	down                                                   atomic.Bool
}

// NewMeter starts a meter writing to l. It replays any spill left by an
// earlier process (in the background).
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
	if m.opts.WriteTimeout <= 0 {
		m.opts.WriteTimeout = 10 * time.Second
	}
	if m.opts.Now == nil {
		m.opts.Now = time.Now
	}
	if m.opts.Pricer == nil {
		m.opts.Pricer = NewPricer(nil)
	}
	m.log = m.opts.Logger
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.opts.SpillDir != "" {
		sp, err := openSpill(m.opts.SpillDir)
		if err != nil {
			return nil, err
		}
		m.sp = sp
	}
	m.ch = make(chan Event, m.opts.Buffer)
	m.flush = make(chan chan error)
	m.quit = make(chan struct{})
	m.done = make(chan struct{})
	go m.run()
	return m, nil
}

// Record queues ev for the ledger. It never waits for the ledger: when the
// buffer is full the event goes to the spill file instead. Ingested is set
// when zero.
func (m *Meter) Record(ev Event) {
	m.recorded.Add(1)
	if ev.Ingested.IsZero() {
		ev.Ingested = m.opts.Now()
	}
	if m.closed.Load() {
		m.dropped.Add(1)
		return
	}
	select {
	case m.ch <- ev:
	default:
		m.toSpill([]Event{ev})
	}
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
		var late []Event
		for len(m.ch) > 0 {
			late = append(late, <-m.ch)
		}
		if len(late) > 0 {
			m.toSpill(late)
		}
		if m.sp != nil {
			err = m.sp.close()
		}
	})
	return err
}

// Stats returns the meter's counters.
func (m *Meter) Stats() MeterStats {
	return MeterStats{
		Recorded: m.recorded.Load(), Written: m.written.Load(), Spilled: m.spilled.Load(),
		Replayed: m.replayed.Load(), Dropped: m.dropped.Load(), Corrupt: m.corrupt.Load(),
	}
}

func (m *Meter) run() {
	defer close(m.done)
	tick := time.NewTicker(m.opts.RetryInterval)
	defer tick.Stop()
	batch := make([]Event, 0, m.opts.Batch)
	var lastErr error
	// drain writes out what the buffer holds now.
	drain := func() {
		for {
			batch = batch[:0]
		fill:
			for len(batch) < cap(batch) {
				select {
				case ev := <-m.ch:
					batch = append(batch, ev)
				default:
					break fill
				}
			}
			if len(batch) == 0 {
				return
			}
			lastErr = m.write(batch)
			if len(batch) < cap(batch) {
				return
			}
		}
	}
	m.replay() // what an earlier process left
	for {
		select {
		case ev := <-m.ch:
			batch = append(batch[:0], ev)
			for len(batch) < cap(batch) {
				select {
				case ev := <-m.ch:
					batch = append(batch, ev)
					continue
				default:
				}
				break
			}
			lastErr = m.write(batch)
			m.syncSpill()
		case reply := <-m.flush:
			drain()
			m.syncSpill()
			if m.sp != nil && m.sp.pending() {
				lastErr = m.replay()
			}
			reply <- lastErr
		case <-tick.C:
			m.syncSpill()
			if m.sp != nil && (m.down.Load() || m.sp.pending()) {
				m.replay()
			}
		case <-m.quit:
			drain()
			m.syncSpill()
			if m.sp != nil && m.sp.pending() {
				m.replay()
			}
			return
		}
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
}

// Facts is what the meter and budgets read from a finished call.
type Facts struct {
	Vendor, Tool, Capability string
	Outcome                  Outcome
	Reason                   string
	Units                    Units
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
	f.Units = Units{UnitCalls: 1}
	switch {
	case err != nil:
		he := hub.AsError(err)
		f.Reason = string(he.Code) + ": " + he.Message
		switch he.Code {
		case hub.CodeTimeout:
			f.Outcome = OutcomeTimeout
		case hub.CodeQueued:
			f.Outcome = OutcomeQueued
		case hub.CodeBudgetExceeded, hub.CodeRateLimited, hub.CodeOverloaded, hub.CodeCircuitOpen,
			hub.CodeForbidden, hub.CodePrivacy, hub.CodeUnauthenticated, hub.CodeTooLarge,
			hub.CodeInvalidArguments, hub.CodeInvalidRequest, hub.CodeUnknownTool:
			f.Outcome = OutcomeRejected
		default:
			f.Outcome = OutcomeError
		}
	case p.Queued:
		f.Outcome = OutcomeQueued
	case p.Stale:
		f.Outcome = OutcomeStale
	case p.Cached:
		f.Outcome = OutcomeCached
	case r != nil && r.IsError:
		f.Outcome, f.Reason = OutcomeError, "tool reported an error"
		f.Units = UnitsFrom(r.Structured)
	case p.Fallback:
		f.Outcome, f.Units = OutcomeFallback, UnitsFrom(r.Structured)
	default:
		f.Outcome = OutcomeOK
		if r != nil {
			f.Units = UnitsFrom(r.Structured)
		}
	}
	return f
}

// Middleware meters every call (install it in [hub.Options].Outer, after
// the decision log): one call-outcome event, plus one event per vendor
// attempt in c.Trace.Attempts. Recording never blocks the call.
func (m *Meter) Middleware() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			note := &callNote{}
			r, err := next.Invoke(context.WithValue(ctx, noteKey{}, note), c)
			m.recordCall(c, r, err, note)
			return r, err
		})
	}
}

func (m *Meter) recordCall(c *hub.Call, r *hub.Result, err error, note *callNote) {
	now := m.opts.Now()
	start := c.Start
	if start.IsZero() {
		start = now
	}
	f := CallFacts(c, r, err)
	ch := note.charge
	if !note.charged {
		ch = m.opts.Pricer.TenantCharge(c.Tenant, f.Vendor, f.Tool, start, f.Outcome, f.Units)
	}
	m.Record(Event{
		Key: CallKey(c.ID), CallID: c.ID, Kind: KindCall, Time: start, Ingested: now,
		Tenant: c.Tenant, Vendor: f.Vendor, Tool: f.Tool, Capability: f.Capability,
		Outcome: f.Outcome, Reason: f.Reason, Latency: now.Sub(start), Units: f.Units,
		TenantUnitPrice: ch.UnitPrice, TenantCost: ch.Cost, Currency: ch.Currency, PriceVersion: ch.Version,
	})
	if c.Trace == nil {
		return
	}
	// The answering attempt is the last ok one of the answering vendor.
	answer := -1
	if f.Outcome == OutcomeOK || f.Outcome == OutcomeFallback {
		for i := len(c.Trace.Attempts) - 1; i >= 0; i-- {
			if a := c.Trace.Attempts[i]; a.Outcome == "ok" && a.Vendor == f.Vendor {
				answer = i
				break
			}
		}
	}
	for i, a := range c.Trace.Attempts {
		out, reason := OutcomeOK, ""
		switch {
		case a.Outcome == string(hub.CodeTimeout):
			out, reason = OutcomeTimeout, a.Outcome+": "+a.Error
		case a.Outcome != "ok":
			out, reason = OutcomeError, strings.TrimSuffix(a.Outcome+": "+a.Error, ": ")
		}
		units := Units{UnitCalls: 1}
		if i == answer {
			units = f.Units
		}
		pay := m.opts.Pricer.VendorPayout(a.Vendor, a.Tool, start, out, units)
		m.Record(Event{
			Key: AttemptKey(c.ID, i+1), CallID: c.ID, Kind: KindAttempt, Attempt: i + 1, Time: start, Ingested: now,
			Tenant: c.Tenant, Vendor: a.Vendor, Tool: a.Tool, Capability: f.Capability,
			Outcome: out, Reason: reason, Latency: time.Duration(a.LatencyMS * float64(time.Millisecond)), Units: units,
			VendorUnitPrice: pay.UnitPrice, VendorCost: pay.Cost, Currency: pay.Currency, PriceVersion: pay.Version,
		})
	}
}
