package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// ErrAttemptTimeout wraps the error of an attempt that ran out of its own
// time (a per-attempt deadline) while the caller's context was still live.
// [DefaultClassify] treats it as [Transient].
var ErrAttemptTimeout = errors.New("retry: attempt timed out")

// Class is what a classifier says of an attempt's error.
type Class uint8

const (
	// Permanent errors are not retried.
	Permanent Class = iota
	// Transient errors are retried when the call is idempotent
	// ([Policy.Idempotent]): the upstream may have acted on the attempt.
	Transient
	// Unsent errors prove the request never reached the upstream (the
	// connection was refused), so a retry is safe even for a call that is
	// not idempotent.
	Unsent
)

func (c Class) String() string {
	switch c {
	case Permanent:
		return "permanent"
	case Transient:
		return "transient"
	case Unsent:
		return "unsent"
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Policy says how to retry. The zero value retries nothing (the call is
// not known to be idempotent); set Idempotent to get the defaults: 3
// retries, full-jitter backoff from 1s doubling to a cap of 30s.
type Policy struct {
	// Max is the number of retries after the first attempt.
	// Zero means 3; negative means none.
	Max int
	// Base is the backoff ceiling before the first retry. Zero means 1s.
	Base time.Duration
	// Cap bounds the backoff ceiling. Zero means 30s.
	Cap time.Duration
	// Multiplier grows the ceiling per retry. Zero means 2; values below 1
	// mean 1.
	Multiplier float64
	// AttemptTimeout is how long one attempt may take (its own deadline).
	// With it, a retry starts only when it can still finish before ctx's
	// deadline; zero means only its start must come before the deadline.
	AttemptTimeout time.Duration
	// Idempotent reports that repeating the call is safe: the tool is
	// idempotent, or the upstream deduplicates by an idempotency key sent
	// with every attempt. When false, only [Unsent] errors are retried.
	Idempotent bool

	// Classify says which errors are worth a retry. Nil means [DefaultClassify].
	Classify func(error) Class
	// OnRetry, if set, is called before each wait, with the attempt that
	// failed (from 0), its error and the wait: for metrics and decision logs.
	OnRetry func(attempt int, err error, wait time.Duration)

	// Rand returns a uniform number in [0, 1) for the jitter.
	// Nil means math/rand/v2's Float64. Tests inject their own.
	Rand func() float64
	// Sleep waits d or until ctx is done, returning ctx's error then.
	// Nil means a timer. Tests inject a fake.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now returns the current time, for the deadline check. Nil means
	// [time.Now]. Tests whose Sleep advances a fake clock inject it.
	Now func() time.Time
}

// Ceiling returns the backoff ceiling before retry n (from 0):
// min(Cap, Base·Multiplier^n). The wait is drawn uniformly below it.
func (p Policy) Ceiling(n int) time.Duration {
	base, maxWait, mult := p.Base, p.Cap, p.Multiplier
	if base <= 0 {
		base = time.Second
	}
	if maxWait <= 0 {
		maxWait = 30 * time.Second
	}
	switch {
	case mult == 0:
		mult = 2
	case mult < 1:
		mult = 1
	}
	c := float64(base) * math.Pow(mult, float64(n))
	if c >= float64(maxWait) || math.IsNaN(c) {
		return maxWait
	}
	return time.Duration(c)
}

// Backoff returns the wait before retry n (from 0) with full jitter:
// uniform in [0, Ceiling(n)). For queues that schedule their own retries.
func (p Policy) Backoff(n int) time.Duration {
	rnd := p.Rand
	if rnd == nil {
		rnd = rand.Float64
	}
	return time.Duration(rnd() * float64(p.Ceiling(n)))
}

// Do calls fn until it succeeds, fails with an error not worth retrying, or
// runs out of retries or time, and returns fn's last error (nil on success).
// attempt counts from 0: 0 is the first attempt, higher ones are retries.
//
// Between attempts Do waits [Policy.Backoff], or longer if the error says
// so through a RetryAfter method (a server's Retry-After); it never waits
// past ctx's deadline: if the wait would reach it, or the next attempt
// could not finish inside it ([Policy.AttemptTimeout]), Do stops at once. When
// ctx is done Do stops, returning the last error, or ctx's error if no
// attempt ran. An attempt failing with [context.DeadlineExceeded] while ctx
// is live ran out of its own deadline: Do wraps that error with
// [ErrAttemptTimeout] before classifying it.
func Do(ctx context.Context, p Policy, fn func(ctx context.Context, attempt int) error) error {
	retries := p.Max
	switch {
	case retries == 0:
		retries = 3
	case retries < 0:
		retries = 0
	}
	classify := p.Classify
	if classify == nil {
		classify = DefaultClassify
	}
	sleep := p.Sleep
	if sleep == nil {
		sleep = sleepTimer
	}
	now := p.Now
	if now == nil {
		now = time.Now
	}

	if err := ctx.Err(); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := fn(ctx, attempt)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err // the caller gave up; nothing to retry for
		}
		if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrAttemptTimeout) {
			err = fmt.Errorf("%w: %w", ErrAttemptTimeout, err)
		}
		if attempt >= retries {
			return err
		}
		switch classify(err) {
		case Permanent:
			return err
		case Transient:
			if !p.Idempotent {
				return err
			}
		}

		wait := p.Backoff(attempt)
		var ra RetryAfter
		if errors.As(err, &ra) {
			wait = max(wait, ra.RetryAfter())
		}
		if deadline, ok := ctx.Deadline(); ok && (!now().Add(wait).Before(deadline) ||
			p.AttemptTimeout > 0 && now().Add(wait+p.AttemptTimeout).After(deadline)) {
			return err // the next attempt could not start, or finish, in time
		}
		if p.OnRetry != nil {
			p.OnRetry(attempt, err, wait)
		}
		if sleep(ctx, wait) != nil {
			return err
		}
	}
}

func sleepTimer(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
