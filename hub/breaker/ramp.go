package breaker

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// RampOptions configures a [Ramp]. A nil *RampOptions means all defaults.
type RampOptions struct {
	// Steps are the fractions of traffic admitted at each step, rising, the
	// last one 1. Nil means 0.05, 0.25, 0.5, 1.
	Steps []float64
	// Interval is how long each step must run without a failure before the
	// next. Zero means 30s.
	Interval time.Duration
	// Floor, when positive, admits a call whenever none was admitted for
	// Floor, whatever the step's share: a share of little traffic is
	// next to none, and a lone caller that can wait (a queued job) would
	// be starved for a whole step. Zero means no floor: admission is the
	// share alone.
	Floor time.Duration
	// Now returns the current time. Nil means [time.Now].
	Now func() time.Time
}

// Ramp returns traffic to a recovered upstream gradually: after [Ramp.Start],
// [Ramp.Admit] lets through 5%, then 25%, 50% and 100% of calls, moving up a
// step each Interval without a [Ramp.Failure]; a failure drops it back to the
// first step. A finished ramp (the initial state) admits everything.
//
// Admission is exact and deterministic: at a step of fraction f, the k-th
// call since the step began is admitted when ⌈k·f⌉ > ⌈(k-1)·f⌉, so the first
// call is admitted and any run of calls holds within one of the fraction.
// A call not admitted is not the upstream's failure: send it elsewhere (the
// next vendor of the chain). Safe for concurrent use.
type Ramp struct {
	steps    []int64 // fractions in parts per million
	interval time.Duration
	floor    time.Duration
	now      func() time.Time

	done atomic.Bool // fast path: finished, admit all

	mu    sync.Mutex
	step  int
	since time.Time // current step began
	calls int64     // Admit calls during the step
	last  time.Time // the last call admitted (for the floor)
}

const ppm = 1_000_000

// NewRamp returns a finished ramp (admitting everything) until [Ramp.Start].
// It panics if the steps are not rising fractions in (0, 1] ending with 1.
func NewRamp(opts *RampOptions) *Ramp {
	r := &Ramp{interval: 30 * time.Second, now: time.Now}
	steps := []float64{0.05, 0.25, 0.5, 1}
	if opts != nil {
		if opts.Steps != nil {
			steps = opts.Steps
		}
		if opts.Interval > 0 {
			r.interval = opts.Interval
		}
		if opts.Now != nil {
			r.now = opts.Now
		}
		r.floor = opts.Floor
	}
	if len(steps) == 0 {
		panic("breaker: NewRamp: no steps")
	}
	for i, f := range steps {
		if !(f > 0 && f <= 1) || (i > 0 && f <= steps[i-1]) || (i == len(steps)-1 && f != 1) {
			panic(fmt.Sprintf("breaker: NewRamp: steps %v: want rising fractions in (0, 1] ending with 1", steps))
		}
		r.steps = append(r.steps, int64(math.Round(f*ppm)))
	}
	r.step = len(r.steps) - 1
	r.done.Store(true)
	return r
}

// Start begins the ramp at its first step (the upstream was just re-admitted).
func (r *Ramp) Start() {
	r.mu.Lock()
	r.setLocked(0, r.now())
	r.mu.Unlock()
}

// Failure reports a failed call during the ramp: back to the first step.
// No effect on a finished ramp.
func (r *Ramp) Failure() {
	if r.done.Load() {
		return
	}
	r.mu.Lock()
	now := r.now()
	r.advanceLocked(now) // it may have finished since
	if !r.done.Load() {
		r.setLocked(0, now)
	}
	r.mu.Unlock()
}

// Admit reports whether this call may go to the upstream.
func (r *Ramp) Admit() bool {
	if r.done.Load() {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.advanceLocked(now)
	f := r.steps[r.step]
	k := r.calls
	r.calls++
	ok := ceilDiv((k+1)*f, ppm) > ceilDiv(k*f, ppm) || r.floor > 0 && now.Sub(r.last) >= r.floor
	if ok {
		r.last = now
	}
	return ok
}

// RampStep describes a ramp for the status API.
type RampStep struct {
	// Index is the current step, from 0; Steps is how many there are.
	Index, Steps int
	// Fraction is the share of calls admitted.
	Fraction float64
	// Since is when the current step began; zero for a ramp never started.
	Since time.Time
	// Done reports a finished ramp: everything is admitted.
	Done bool
}

// Step returns where the ramp stands.
func (r *Ramp) Step() RampStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advanceLocked(r.now())
	return RampStep{
		Index: r.step, Steps: len(r.steps),
		Fraction: float64(r.steps[r.step]) / ppm,
		Since:    r.since, Done: r.done.Load(),
	}
}

func (r *Ramp) advanceLocked(now time.Time) {
	for !r.done.Load() && now.Sub(r.since) >= r.interval {
		r.setLocked(r.step+1, r.since.Add(r.interval))
	}
}

func (r *Ramp) setLocked(step int, since time.Time) {
	r.step, r.since, r.calls = step, since, 0
	r.done.Store(step == len(r.steps)-1)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
