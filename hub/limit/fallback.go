package limit

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// FallbackMode says what a [Fallback] does while its primary is unreachable.
type FallbackMode int

const (
	// FallbackLocal (the zero value) applies local limits at 1/Instances of
	// each rule, so N instances together stay near the configured rate.
	FallbackLocal FallbackMode = iota
	// FailOpen admits every call.
	FailOpen
	// FailClosed refuses every call with an error matching [ErrUnavailable].
	FailClosed
)

// FallbackOptions configures [NewFallback]. A nil *FallbackOptions means all defaults.
type FallbackOptions struct {
	// Mode is what to do while the primary is down. Zero means [FallbackLocal].
	Mode FallbackMode
	// Instances is how many processes share the primary; in [FallbackLocal]
	// mode each rule's rate, burst and reserve are divided by it. Zero means 1.
	Instances int
	// Local is the limiter used in [FallbackLocal] mode. Nil means a
	// [NewLocal] with Now.
	Local Limiter
	// Logger receives one warning when the primary becomes unreachable and
	// one info line when it answers again, never a line per call.
	// Nil means [slog.Default].
	Logger *slog.Logger
	// ProbeInterval is how often, while the primary is down, a background
	// probe (one call on a bucket of its own, bounded by the interval) tries
	// it; callers never wait on a probe. Zero means one second.
	ProbeInterval time.Duration
	// Now returns the current time. Nil means [time.Now].
	Now func() time.Time
}

// Fallback is a [Limiter] that asks a shared primary (normally a redislimit.Limiter)
// and, when the primary fails, switches to a fallback policy until the
// primary answers again. Errors that are the caller's own (ctx done) or an
// invalid request ([ErrInvalid]) are returned as they are and do not switch.
type Fallback struct {
	primary   Limiter
	local     Limiter
	mode      FallbackMode
	instances int
	log       *slog.Logger
	interval  time.Duration
	now       func() time.Time

	degraded  atomic.Bool
	nextProbe atomic.Int64   // unix nanoseconds
	probes    sync.WaitGroup // in-flight probe; waited for by tests
}

var _ Limiter = (*Fallback)(nil)

// NewFallback wraps primary.
func NewFallback(primary Limiter, opts *FallbackOptions) *Fallback {
	f := &Fallback{primary: primary, instances: 1, interval: time.Second, now: time.Now}
	if opts != nil {
		f.mode = opts.Mode
		if opts.Instances > 0 {
			f.instances = opts.Instances
		}
		f.local = opts.Local
		f.log = opts.Logger
		if opts.ProbeInterval > 0 {
			f.interval = opts.ProbeInterval
		}
		if opts.Now != nil {
			f.now = opts.Now
		}
	}
	if f.log == nil {
		f.log = slog.Default()
	}
	if f.local == nil {
		var now func() time.Time // nil: the wall clock, which Local reads cheaper
		if opts != nil {
			now = opts.Now
		}
		f.local = NewLocal(&LocalOptions{Now: now})
	}
	return f
}

// Degraded reports whether the primary is currently considered unreachable.
func (f *Fallback) Degraded() bool { return f.degraded.Load() }

// Allow implements [Limiter].
func (f *Fallback) Allow(ctx context.Context, key string, r Rule, n int) (Decision, error) {
	if err := CheckRule(r, n); err != nil {
		return Decision{}, err
	}
	if !f.degraded.Load() {
		d, err := f.primary.Allow(ctx, key, r, n)
		if err == nil || !f.outage(ctx, err) {
			return d, err
		}
		if f.degraded.CompareAndSwap(false, true) {
			f.nextProbe.Store(f.now().Add(f.interval).UnixNano())
			f.log.LogAttrs(ctx, slog.LevelWarn, "limit: shared limiter unreachable, using fallback limits",
				slog.String("mode", f.mode.String()), slog.Int("instances", f.instances), slog.Any("error", err))
		}
		return f.fallback(ctx, key, r, n)
	}

	now := f.now().UnixNano()
	if next := f.nextProbe.Load(); now >= next && f.nextProbe.CompareAndSwap(next, now+int64(f.interval)) {
		f.probes.Add(1)
		go f.probe()
	}
	return f.fallback(ctx, key, r, n)
}

// probeKey is the bucket probes take a token from, so they spend no caller's tokens.
const probeKey = "_fallback_probe"

// probe asks the primary once, off the caller's path (an unreachable Redis
// can take a dial timeout to answer), and ends the fallback if it answers.
// At most one probe starts per interval and each lasts at most an interval.
func (f *Fallback) probe() {
	defer f.probes.Done()
	ctx, cancel := context.WithTimeout(context.Background(), f.interval)
	defer cancel()
	if _, err := f.primary.Allow(ctx, probeKey, Rule{Rate: 1, Burst: 1}, 1); err != nil {
		return
	}
	if f.degraded.CompareAndSwap(true, false) {
		f.log.LogAttrs(ctx, slog.LevelInfo, "limit: shared limiter reachable again, fallback ended")
	}
}

// outage tells a failing primary from errors that are the caller's.
func (f *Fallback) outage(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !errors.Is(err, ErrInvalid)
}

func (f *Fallback) fallback(ctx context.Context, key string, r Rule, n int) (Decision, error) {
	switch f.mode {
	case FailOpen:
		return Decision{Allowed: true, Remaining: r.Burst - n}, nil
	case FailClosed:
		wait := time.Duration(f.nextProbe.Load() - f.now().UnixNano())
		return Decision{RetryAfter: max(wait, 0)}, ErrUnavailable
	}
	return f.local.Allow(ctx, key, Share(r, n, f.instances), n)
}

// Share returns the part of rule r one of instances processes applies
// locally for requests of n tokens: rate, burst and reserve divided by
// instances, the burst rounded up and never below n plus the reserve, so a
// request valid under r stays valid.
func Share(r Rule, n, instances int) Rule {
	if instances <= 1 {
		return r
	}
	out := Rule{
		Rate:    r.Rate / float64(instances),
		Burst:   (r.Burst + instances - 1) / instances,
		Reserve: r.Reserve / instances,
	}
	out.Burst = max(out.Burst, n+out.Reserve)
	return out
}

func (m FallbackMode) String() string {
	switch m {
	case FallbackLocal:
		return "local"
	case FailOpen:
		return "open"
	case FailClosed:
		return "closed"
	}
	return "FallbackMode(" + strconv.Itoa(int(m)) + ")"
}
