package breaker

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Prober checks an upstream with a real, business-level call (a cheap tool
// call with known arguments), returning nil when it is healthy.
type Prober interface {
	Probe(ctx context.Context) error
}

// ProberFunc adapts a function to [Prober].
type ProberFunc func(ctx context.Context) error

// Probe calls f.
func (f ProberFunc) Probe(ctx context.Context) error { return f(ctx) }

// HealthOptions configures a [Health]. A nil *HealthOptions means all defaults.
type HealthOptions struct {
	// Threshold is how many probe failures in a row eject the upstream.
	// Zero means 3.
	Threshold int
	// Ramp configures the ramp started on re-admission. Nil means defaults;
	// its Now defaults to this Now.
	Ramp *RampOptions
	// Now returns the current time. Nil means [time.Now].
	Now func() time.Time
	// OnChange, if set, is called after each ejection and re-admission,
	// outside the tracker's lock. Keep it quick.
	OnChange func(HealthChange)
}

// HealthChange describes an ejection or a re-admission.
type HealthChange struct {
	Key     string
	Ejected bool // true: ejected; false: re-admitted
	Manual  bool // by an operator
	At      time.Time
	Err     error // the last probe error, for an ejection by probes
}

// HealthSnapshot is a tracker's state for the status API.
type HealthSnapshot struct {
	Key                 string
	Ejected             bool
	Manual              bool // ejected by an operator: probes do not re-admit
	ConsecutiveFailures int
	EjectedAt           time.Time
	LastProbe           time.Time
	LastError           string
	Ramp                RampStep
}

// Health tracks an upstream's health from active probes: Threshold probe
// failures in a row eject it; the next successful probe re-admits it and
// starts its [Ramp]. Callers ask [Health.Admit] before sending a call.
// Safe for concurrent use.
type Health struct {
	key       string
	threshold int
	now       func() time.Time
	onChange  func(HealthChange)
	ramp      *Ramp

	mu          sync.Mutex
	ejected     bool
	manual      bool
	consecutive int
	ejectedAt   time.Time
	lastProbe   time.Time
	lastErr     error
	lastTrialAt time.Time // the last TrialEvery that let a call through
}

// NewHealth returns a tracker for key, admitted, with a finished ramp.
func NewHealth(key string, opts *HealthOptions) *Health {
	h := &Health{key: key, threshold: 3, now: time.Now}
	var ro RampOptions
	if opts != nil {
		if opts.Threshold > 0 {
			h.threshold = opts.Threshold
		}
		if opts.Now != nil {
			h.now = opts.Now
		}
		h.onChange = opts.OnChange
		if opts.Ramp != nil {
			ro = *opts.Ramp
		}
	}
	if ro.Now == nil {
		ro.Now = h.now
	}
	h.ramp = NewRamp(&ro)
	return h
}

// Record applies a probe's result: nil for a healthy upstream.
func (h *Health) Record(err error) {
	h.mu.Lock()
	now := h.now()
	h.lastProbe, h.lastErr = now, err
	var c *HealthChange
	switch {
	case err == nil:
		h.consecutive = 0
		if h.ejected && !h.manual {
			c = h.readmitLocked(now, false)
		}
	default:
		h.consecutive++
		if !h.ejected && h.consecutive >= h.threshold {
			h.ejected, h.ejectedAt = true, now
			c = &HealthChange{Key: h.key, Ejected: true, At: now, Err: err}
		}
	}
	h.mu.Unlock()
	h.notify(c)
}

// Eject takes the upstream out of service until [Health.Readmit]; probes
// do not re-admit it (an operator's switch).
func (h *Health) Eject() {
	h.mu.Lock()
	now := h.now()
	var c *HealthChange
	if !h.ejected || !h.manual {
		if !h.ejected {
			h.ejectedAt = now
			c = &HealthChange{Key: h.key, Ejected: true, Manual: true, At: now}
		}
		h.ejected, h.manual = true, true
	}
	h.mu.Unlock()
	h.notify(c)
}

// Readmit puts an ejected upstream back in service, starting its ramp.
func (h *Health) Readmit() {
	h.mu.Lock()
	var c *HealthChange
	if h.ejected {
		c = h.readmitLocked(h.now(), true)
	}
	h.mu.Unlock()
	h.notify(c)
}

func (h *Health) readmitLocked(now time.Time, manual bool) *HealthChange {
	h.ejected, h.manual, h.consecutive = false, false, 0
	h.ramp.Start()
	return &HealthChange{Key: h.key, Ejected: false, Manual: manual, At: now}
}

// TrialEvery reports whether a call may go to an upstream ejected by its
// probes as a trial, at most once every interval (and not before it has
// been ejected that long): for a caller that can wait (a queued job). A
// trial that succeeds is reported with Record(nil), as a good probe, and
// re-admits the upstream. An operator's ejection ([Health.Eject]) admits
// no trial.
func (h *Health) TrialEvery(every time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if !h.ejected || h.manual || now.Sub(h.ejectedAt) < every || now.Sub(h.lastTrialAt) < every {
		return false
	}
	h.lastTrialAt = now
	return true
}

// ejectedByProbes reports an ejection that a good probe ends (not an operator's).
func (h *Health) ejectedByProbes() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ejected && !h.manual
}

// Ejected reports whether the upstream is out of service.
func (h *Health) Ejected() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ejected
}

// Admit reports whether a call may go to the upstream: not while it is
// ejected, and during the ramp only for the ramp's share of calls.
func (h *Health) Admit() bool {
	if h.Ejected() {
		return false
	}
	return h.ramp.Admit()
}

// Ramp returns the ramp started on re-admission, to report call failures
// during it ([Ramp.Failure]).
func (h *Health) Ramp() *Ramp { return h.ramp }

// Snapshot returns the tracker's state for the status API.
func (h *Health) Snapshot() HealthSnapshot {
	h.mu.Lock()
	s := HealthSnapshot{
		Key: h.key, Ejected: h.ejected, Manual: h.manual,
		ConsecutiveFailures: h.consecutive, EjectedAt: h.ejectedAt, LastProbe: h.lastProbe,
	}
	if h.lastErr != nil {
		s.LastError = h.lastErr.Error()
	}
	h.mu.Unlock()
	s.Ramp = h.ramp.Step()
	return s
}

func (h *Health) notify(c *HealthChange) {
	if c != nil && h.onChange != nil {
		h.onChange(*c)
	}
}

// ErrNoVerdict wraps a probe's error that says nothing of the upstream
// (the caller's own connection to it is being made): [RunProbes] records
// neither a success nor a failure.
var ErrNoVerdict = errors.New("breaker: probe gave no verdict")

// RunProbes probes p every interval, starting at once, and records each
// result in h (but an [ErrNoVerdict]), until ctx is done. Each probe gets at most one interval. It
// blocks; run it in a goroutine of its own per upstream.
func RunProbes(ctx context.Context, interval time.Duration, p Prober, h *Health) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, interval)
		err := p.Probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return // stopping: this result says nothing of the upstream
		}
		if !errors.Is(err, ErrNoVerdict) {
			h.Record(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunPings pings an upstream every interval while its breaker b is open,
// or its probes ejected it from h (h may be nil), and need reports true (a
// caller waits for the upstream: a queued job). A ping that succeeds counts
// as a good probe: it re-admits an ejected upstream (h.Record(nil)) and
// turns an open b half-open ([Breaker.TrialNow]), so that trial calls find
// the recovery at once instead of at the end of the cool-down or of the
// next probe's interval. It blocks until ctx is done; run it in a goroutine
// of its own.
//
// A ping is a protocol-level check (an MCP ping, an A2A agent card fetch):
// that the upstream answers, not that its tools work. So a failed ping is
// recorded nowhere (it counts against the upstream no more than the probes
// already make it), and a ping's success is trusted less each time the
// trials it let through fail: after a half-open circuit that a ping opened
// trips again, the pings skip twice as many intervals before the next (up
// to 8: with a 250ms interval, a try every 2s, no more often than a
// waiting job looks again by itself), until the circuit closes. Each ping
// gets at most one interval.
func RunPings(ctx context.Context, interval time.Duration, p Prober, b *Breaker, h *Health, need func() bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	const maxBackoff = 8
	backoff, skip := 1, 0
	pinged := false // a ping turned the circuit half-open; the trials decide
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := b.State()
		if pinged && s != HalfOpen {
			pinged = false
			if s == Open { // the trials failed: the pings said too little
				backoff = min(2*backoff, maxBackoff)
				skip = backoff - 1
			}
		}
		if s == Closed {
			backoff, skip = 1, 0
		}
		open, ejected := s == Open, h != nil && h.ejectedByProbes()
		if !(open || ejected) || !need() {
			continue
		}
		if open && skip > 0 {
			skip--
			open = false
			if !ejected {
				continue
			}
		}
		pctx, cancel := context.WithTimeout(ctx, interval)
		err := p.Probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			continue
		}
		if ejected {
			h.Record(nil)
		}
		if open {
			b.TrialNow()
			pinged = b.State() == HalfOpen
		}
	}
}
