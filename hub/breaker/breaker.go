package breaker

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrOpen is matched by the error of a call refused by an open (or
// half-open and busy) breaker; see [OpenError].
var ErrOpen = errors.New("breaker: circuit open")

// OpenError is the error [Breaker.Allow] returns while the circuit refuses
// calls. It matches [ErrOpen] and reports the wait through a RetryAfter
// method, which the retry package honours.
type OpenError struct {
	// Key is the breaker's key.
	Key string
	// State is [Open], or [HalfOpen] when all trial calls are taken.
	State State
	// Wait is how long until the breaker lets a trial call through; zero
	// when half-open, where it depends on the trial calls in flight.
	Wait time.Duration
}

func (e *OpenError) Error() string {
	if e.State == HalfOpen {
		return fmt.Sprintf("%s: %q: half-open, trial calls in flight", ErrOpen.Error(), e.Key)
	}
	return fmt.Sprintf("%s: %q: retry in %s", ErrOpen.Error(), e.Key, e.Wait)
}

// Unwrap returns [ErrOpen].
func (e *OpenError) Unwrap() error { return ErrOpen }

// RetryAfter returns Wait.
func (e *OpenError) RetryAfter() time.Duration { return e.Wait }

// State is a breaker's state.
type State int32

const (
	// Closed lets every call through and watches their outcomes.
	Closed State = iota
	// Open refuses every call until its cool-down has passed.
	Open
	// HalfOpen lets a few trial calls through to decide between Closed and Open.
	HalfOpen
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Outcome is what became of an admitted call.
type Outcome uint8

const (
	// Success counts for the upstream.
	Success Outcome = iota
	// Failure counts against the upstream: an error, a timeout, a 5xx.
	Failure
	// Ignored counts neither way: the caller cancelled, the arguments were
	// invalid, or the call never reached the upstream.
	Ignored
)

func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Options configures a [Breaker]. A nil *Options means all defaults; each
// zero field means its default.
type Options struct {
	// Window is the span of the sliding window of outcomes. Zero means 10s.
	Window time.Duration
	// Buckets is how many buckets the window is kept in; it slides by
	// Window/Buckets. Zero means 10.
	Buckets int
	// MinCalls is the least number of calls in the window before the failure
	// ratio can open the circuit. Zero means 20.
	MinCalls int
	// FailureRatio opens the circuit when failures/calls in the window reach
	// it. Zero means 0.5; a value above 1 disables the ratio.
	FailureRatio float64
	// ConsecutiveFailures opens the circuit after that many failures in a
	// row, whatever the window says. Zero means 5; negative disables.
	ConsecutiveFailures int
	// CoolDown is how long the circuit stays open after its first trip;
	// each further trip doubles it, up to MaxCoolDown. Zero means 30s.
	CoolDown time.Duration
	// MaxCoolDown caps the cool-down. Zero means 120s.
	MaxCoolDown time.Duration
	// HealthyAfter is how long the circuit must stay closed without tripping
	// for the cool-down to start again from CoolDown. Zero means 5m.
	HealthyAfter time.Duration
	// Trials is how many trial calls a half-open circuit lets through; all
	// must succeed to close it. Zero means 3.
	Trials int
	// Ramp configures the recovery ramp started when the circuit closes
	// again. Nil means defaults (5% → 25% → 50% → 100%, 30s a step); its Now
	// defaults to this Now. Steps of just {1} disable it.
	Ramp *RampOptions
	// Now returns the current time. Nil means [time.Now].
	Now func() time.Time
	// OnStateChange, if set, is called after each state change, outside the
	// breaker's lock, from the goroutine that caused it. Keep it quick.
	OnStateChange func(Change)
}

// Change describes a state change, for metrics and logs.
type Change struct {
	Key      string
	From, To State
	At       time.Time
	// CoolDown is the open period when To is [Open].
	CoolDown time.Duration
	// Trips counts trips since the circuit was last healthy.
	Trips int
	// Evidence reports a change to [HalfOpen] made on evidence that the
	// upstream answers again ([Breaker.TrialNow]: a probe, a ping), rather
	// than at the end of a cool-down or for a caller's own trial
	// ([Breaker.TrialEvery]). Its trial calls are likely to succeed: a
	// caller that waits for the upstream may send them now.
	Evidence bool
}

// Snapshot is a breaker's state for the status API.
type Snapshot struct {
	Key   string
	State State
	// Calls and Failures count outcomes in the sliding window (closed state).
	Calls, Failures int
	// ConsecutiveFailures counts failures in a row (closed state).
	ConsecutiveFailures int
	// OpenedAt is when the circuit last opened; zero if never.
	OpenedAt time.Time
	// CoolDown is the current (or last) open period.
	CoolDown time.Duration
	// RetryIn is, when open, how long until trial calls are let through.
	RetryIn time.Duration
	// Trips counts trips since the circuit was last healthy.
	Trips int
	// TrialsInFlight and TrialsSucceeded describe the half-open state.
	TrialsInFlight, TrialsSucceeded int
	// Ramp is where the recovery ramp stands.
	Ramp RampStep
}

// Breaker is a circuit breaker for one key (a vendor, or a vendor's tool).
// Safe for concurrent use.
type Breaker struct {
	key  string
	o    Options // defaults applied
	ramp *Ramp

	// word holds gen<<2 | state so Allow can admit a closed-circuit call
	// without the lock. gen counts state changes: an outcome reported for a
	// call admitted under an older gen is dropped.
	word atomic.Uint64

	mu              sync.Mutex
	ring            []bucket
	consecutive     int
	openedAt        time.Time
	closedAt        time.Time
	coolDown        time.Duration
	trips           int
	trialsInFlight  int
	trialsSucceeded int
	lastTrialAt     time.Time // the last TrialEvery that turned the circuit half-open
}

type bucket struct {
	epoch           int64 // time slot this bucket counts for
	calls, failures int
}

// New returns a closed breaker for key.
func New(key string, opts *Options) *Breaker {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Second
	}
	if o.Buckets <= 0 {
		o.Buckets = 10
	}
	if o.MinCalls <= 0 {
		o.MinCalls = 20
	}
	if o.FailureRatio <= 0 {
		o.FailureRatio = 0.5
	}
	if o.ConsecutiveFailures == 0 {
		o.ConsecutiveFailures = 5
	}
	if o.CoolDown <= 0 {
		o.CoolDown = 30 * time.Second
	}
	if o.MaxCoolDown <= 0 {
		o.MaxCoolDown = 120 * time.Second
	}
	o.MaxCoolDown = max(o.MaxCoolDown, o.CoolDown)
	if o.HealthyAfter <= 0 {
		o.HealthyAfter = 5 * time.Minute
	}
	if o.Trials <= 0 {
		o.Trials = 3
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var ro RampOptions
	if o.Ramp != nil {
		ro = *o.Ramp
	}
	if ro.Now == nil {
		ro.Now = o.Now
	}
	b := &Breaker{key: key, o: o, ring: make([]bucket, o.Buckets), ramp: NewRamp(&ro)}
	b.closedAt = o.Now()
	b.coolDown = o.CoolDown
	return b
}

// Key returns the breaker's key.
func (b *Breaker) Key() string { return b.key }

// Ramp returns the breaker's recovery ramp. It is finished (admitting
// everything) until the circuit closes after a trip; then it starts, and a
// failure while closed drops it back to its first step. Ask [Ramp.Admit]
// before [Breaker.Allow]; send calls it does not admit elsewhere.
func (b *Breaker) Ramp() *Ramp { return b.ramp }

// Allow asks to make a call. If the circuit lets it through, Allow returns
// done, which the caller must call exactly once with the call's outcome
// (later calls are no-ops). Otherwise it returns an [*OpenError] at once.
func (b *Breaker) Allow() (done func(Outcome), err error) {
	t, err := b.Admit()
	if err != nil {
		return nil, err
	}
	return t.doneFunc(), nil
}

// Ticket is a call admitted by [Breaker.Admit].
type Ticket struct {
	b   *Breaker
	gen uint64
}

// Done reports the admitted call's outcome. Call it exactly once (unlike
// Allow's done, it does not guard against a second call).
func (t Ticket) Done(o Outcome) { t.b.record(t.gen, o) }

// Admit is [Breaker.Allow] without the done function's allocations, for
// hot paths: on success report the outcome with the Ticket's Done, once.
func (b *Breaker) Admit() (Ticket, error) {
	if w := b.word.Load(); State(w&3) == Closed {
		return Ticket{b, w >> 2}, nil
	}
	var changes []Change
	var err error
	b.mu.Lock()
	now := b.o.Now()
	changes = b.advanceLocked(now, changes)
	gen, state := b.loadLocked()
	switch state {
	case Closed:
	case HalfOpen:
		if b.trialsInFlight+b.trialsSucceeded >= b.o.Trials {
			err = &OpenError{Key: b.key, State: HalfOpen}
		} else {
			b.trialsInFlight++
		}
	case Open:
		err = &OpenError{Key: b.key, State: Open, Wait: b.openedAt.Add(b.coolDown).Sub(now)}
	}
	b.mu.Unlock()
	b.notify(changes)
	if err != nil {
		return Ticket{}, err
	}
	return Ticket{b, gen}, nil
}

func (t Ticket) doneFunc() func(Outcome) {
	var used atomic.Bool
	return func(o Outcome) {
		if !used.Swap(true) {
			t.b.record(t.gen, o)
		}
	}
}

// record applies the outcome of a call admitted under gen.
func (b *Breaker) record(gen uint64, o Outcome) {
	var changes []Change
	b.mu.Lock()
	now := b.o.Now()
	changes = b.advanceLocked(now, changes)
	cur, state := b.loadLocked()
	if cur != gen {
		b.mu.Unlock() // the state changed since the call was admitted
		b.notify(changes)
		return
	}
	switch state {
	case Closed:
		if o == Ignored {
			break
		}
		bk := b.bucketLocked(now)
		bk.calls++
		if o == Success {
			b.consecutive = 0
			break
		}
		bk.failures++
		b.consecutive++
		calls, failures := b.windowLocked(now)
		if (b.o.ConsecutiveFailures > 0 && b.consecutive >= b.o.ConsecutiveFailures) ||
			(calls >= b.o.MinCalls && float64(failures) >= b.o.FailureRatio*float64(calls)) {
			changes = b.tripLocked(now, changes)
		} else {
			b.ramp.Failure()
		}
	case HalfOpen:
		b.trialsInFlight--
		switch o {
		case Success:
			b.trialsSucceeded++
			if b.trialsSucceeded >= b.o.Trials {
				changes = b.setLocked(now, Closed, changes)
			}
		case Failure:
			changes = b.tripLocked(now, changes)
		}
	}
	b.mu.Unlock()
	b.notify(changes)
}

// State returns the current state.
func (b *Breaker) State() State {
	b.mu.Lock()
	changes := b.advanceLocked(b.o.Now(), nil)
	_, s := b.loadLocked()
	b.mu.Unlock()
	b.notify(changes)
	return s
}

// Snapshot returns the breaker's state for the status API.
func (b *Breaker) Snapshot() Snapshot {
	b.mu.Lock()
	now := b.o.Now()
	changes := b.advanceLocked(now, nil)
	_, s := b.loadLocked()
	calls, failures := b.windowLocked(now)
	snap := Snapshot{
		Key: b.key, State: s,
		Calls: calls, Failures: failures, ConsecutiveFailures: b.consecutive,
		OpenedAt: b.openedAt, CoolDown: b.coolDown, Trips: b.trips,
		TrialsInFlight: b.trialsInFlight, TrialsSucceeded: b.trialsSucceeded,
	}
	if s == Open {
		snap.RetryIn = b.openedAt.Add(b.coolDown).Sub(now)
	}
	b.mu.Unlock()
	snap.Ramp = b.ramp.Step()
	b.notify(changes)
	return snap
}

// Trip opens the circuit now, as a failure would (an operator's switch).
func (b *Breaker) Trip() {
	b.mu.Lock()
	now := b.o.Now()
	changes := b.tripLocked(now, b.advanceLocked(now, nil))
	b.mu.Unlock()
	b.notify(changes)
}

// TrialNow ends an open circuit's cool-down at once: it turns half-open
// and lets its trial calls through. For evidence that the upstream is
// back (a health probe that re-admitted it); the trials still decide.
// It reports whether the circuit was open.
func (b *Breaker) TrialNow() bool {
	b.mu.Lock()
	now := b.o.Now()
	changes := b.advanceLocked(now, nil)
	_, s := b.loadLocked()
	if s == Open {
		changes = b.setLocked(now, HalfOpen, changes)
		if n := len(changes); n > 0 {
			changes[n-1].Evidence = true
		}
	}
	b.mu.Unlock()
	b.notify(changes)
	return s == Open
}

// TrialEvery is [Breaker.TrialNow] at most once every interval: an open
// circuit turns half-open when it has been open, and its last such trial
// was, at least every ago. For a caller that can wait and whose own call is
// the trial (a queued job), so that an upstream's recovery is found within
// every, whatever the cool-down and whether it is probed or not. It
// reports whether the circuit turned half-open.
func (b *Breaker) TrialEvery(every time.Duration) bool {
	b.mu.Lock()
	now := b.o.Now()
	changes := b.advanceLocked(now, nil)
	_, s := b.loadLocked()
	ok := s == Open && now.Sub(b.openedAt) >= every && now.Sub(b.lastTrialAt) >= every
	if ok {
		b.lastTrialAt = now
		changes = b.setLocked(now, HalfOpen, changes)
	}
	b.mu.Unlock()
	b.notify(changes)
	return ok
}

// Reset closes the circuit and forgets its history (an operator's switch).
func (b *Breaker) Reset() {
	b.mu.Lock()
	now := b.o.Now()
	b.trips = 0
	b.coolDown = b.o.CoolDown
	var changes []Change
	if _, s := b.loadLocked(); s != Closed {
		changes = b.setLocked(now, Closed, nil)
	}
	b.mu.Unlock()
	b.notify(changes)
}

func (b *Breaker) loadLocked() (gen uint64, s State) {
	w := b.word.Load()
	return w >> 2, State(w & 3)
}

// advanceLocked applies the passage of time: an open circuit whose
// cool-down has passed turns half-open, and a circuit closed for HealthyAfter
// forgets its trips, so its next cool-down starts over from CoolDown.
func (b *Breaker) advanceLocked(now time.Time, changes []Change) []Change {
	switch _, s := b.loadLocked(); s {
	case Open:
		if !now.Before(b.openedAt.Add(b.coolDown)) {
			changes = b.setLocked(now, HalfOpen, changes)
		}
	case Closed:
		if b.trips > 0 && now.Sub(b.closedAt) >= b.o.HealthyAfter {
			b.trips = 0
			b.coolDown = b.o.CoolDown
		}
	}
	return changes
}

// tripLocked opens the circuit with the next cool-down. Call advanceLocked first.
func (b *Breaker) tripLocked(now time.Time, changes []Change) []Change {
	b.trips++
	b.coolDown = b.o.CoolDown
	for i := 1; i < b.trips && b.coolDown < b.o.MaxCoolDown; i++ {
		b.coolDown *= 2
	}
	b.coolDown = min(b.coolDown, b.o.MaxCoolDown)
	b.openedAt = now
	return b.setLocked(now, Open, changes)
}

// setLocked enters state to, starting a new generation with clean counters.
func (b *Breaker) setLocked(now time.Time, to State, changes []Change) []Change {
	gen, from := b.loadLocked()
	b.word.Store((gen+1)<<2 | uint64(to))
	clear(b.ring)
	b.consecutive = 0
	b.trialsInFlight, b.trialsSucceeded = 0, 0
	if to == Closed {
		b.closedAt = now
		if from == HalfOpen {
			b.ramp.Start()
		}
	}
	if b.o.OnStateChange == nil {
		return changes
	}
	c := Change{Key: b.key, From: from, To: to, At: now, Trips: b.trips}
	if to == Open {
		c.CoolDown = b.coolDown
	}
	return append(changes, c)
}

func (b *Breaker) notify(changes []Change) {
	for _, c := range changes {
		b.o.OnStateChange(c)
	}
}

func (b *Breaker) slot(now time.Time) int64 {
	return now.UnixNano() / int64(b.o.Window/time.Duration(b.o.Buckets))
}

func (b *Breaker) bucketLocked(now time.Time) *bucket {
	epoch := b.slot(now)
	bk := &b.ring[int(uint64(epoch)%uint64(len(b.ring)))]
	if bk.epoch != epoch {
		*bk = bucket{epoch: epoch}
	}
	return bk
}

func (b *Breaker) windowLocked(now time.Time) (calls, failures int) {
	epoch := b.slot(now)
	for _, bk := range b.ring {
		if bk.epoch > epoch-int64(len(b.ring)) && bk.epoch <= epoch {
			calls += bk.calls
			failures += bk.failures
		}
	}
	return calls, failures
}
