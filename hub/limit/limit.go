package limit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Sentinel errors. Match them with [errors.Is].
var (
	// ErrRateLimited is matched by the error of a refused [Decision] (see [Decision.Err]).
	ErrRateLimited = errors.New("limit: rate limited")
	// ErrOverloaded is returned by [Bulkhead.Acquire] when no slot frees up within the wait.
	ErrOverloaded = errors.New("limit: overloaded")
	// ErrInvalid is returned for a request no bucket could ever admit
	// (non-positive rate or burst, n < 1, n + Reserve > Burst): a configuration error.
	ErrInvalid = errors.New("limit: invalid request")
	// ErrUnavailable is returned by a [Fallback] in [FailClosed] mode while the
	// shared limiter is unreachable.
	ErrUnavailable = errors.New("limit: limiter unavailable")
)

// Rule describes a token bucket: it refills at Rate tokens per second up to
// Burst tokens. The same key must be used with the same Rate and Burst;
// a change takes effect from the next call.
type Rule struct {
	// Rate is the refill rate in tokens per second. It must be positive and finite.
	Rate float64
	// Burst is the bucket depth: the most tokens that can be taken at once.
	// It must be at least 1.
	Burst int
	// Reserve is how many tokens must remain in the bucket after this
	// admission; a call that would dip below it is refused. Zero admits down
	// to an empty bucket. [Priority] sets it per class of call.
	Reserve int
}

// Decision is the answer of a [Limiter].
type Decision struct {
	// Allowed reports whether the n tokens were taken.
	Allowed bool
	// RetryAfter is, for a refused call, how long until the same call would
	// be admitted if nobody else took tokens meanwhile. Zero when Allowed.
	RetryAfter time.Duration
	// Remaining is the number of whole tokens left in the bucket after this
	// decision (including any Reserve).
	Remaining int
}

// Err returns nil for an admitted call, or a [*LimitedError] (matching
// [ErrRateLimited]) carrying RetryAfter for a refused one.
func (d Decision) Err() error {
	if d.Allowed {
		return nil
	}
	return &LimitedError{Wait: d.RetryAfter}
}

// LimitedError is the error of a refused admission. It matches
// [ErrRateLimited] and reports the wait through a RetryAfter method, which
// the retry package honours.
type LimitedError struct {
	// Wait is how long until the call could be admitted.
	Wait time.Duration
}

func (e *LimitedError) Error() string {
	return fmt.Sprintf("%s; retry after %s", ErrRateLimited.Error(), e.Wait)
}

// Unwrap returns [ErrRateLimited].
func (e *LimitedError) Unwrap() error { return ErrRateLimited }

// RetryAfter returns Wait.
func (e *LimitedError) RetryAfter() time.Duration { return e.Wait }

// Limiter admits or refuses calls against a token bucket per key.
//
// Allow takes n tokens from the bucket of key under rule r if at least
// n + r.Reserve tokens are available, and never blocks waiting for tokens.
// A refused call is not an error: err is non-nil only when the limiter could
// not decide (a store is unreachable, ctx is done) or the request is invalid
// ([ErrInvalid]).
//
// Implementations: [Local] (in-process), redislimit.Limiter (shared by instances), and
// the [Fallback] wrapper.
type Limiter interface {
	Allow(ctx context.Context, key string, r Rule, n int) (Decision, error)
}

// LimiterFunc adapts a function to [Limiter].
type LimiterFunc func(ctx context.Context, key string, r Rule, n int) (Decision, error)

// Allow calls f.
func (f LimiterFunc) Allow(ctx context.Context, key string, r Rule, n int) (Decision, error) {
	return f(ctx, key, r, n)
}

// CheckRule validates a request for n tokens against its rule: every
// [Limiter] implementation calls it first in Allow.
func CheckRule(r Rule, n int) error {
	switch {
	case !(r.Rate > 0) || math.IsInf(r.Rate, 0):
		return fmt.Errorf("%w: rate %v: want a positive, finite number of tokens per second", ErrInvalid, r.Rate)
	case r.Burst < 1:
		return fmt.Errorf("%w: burst %d: want at least 1", ErrInvalid, r.Burst)
	case r.Reserve < 0:
		return fmt.Errorf("%w: reserve %d: want at least 0", ErrInvalid, r.Reserve)
	case n < 1:
		return fmt.Errorf("%w: n %d: want at least 1", ErrInvalid, n)
	case n+r.Reserve > r.Burst:
		return fmt.Errorf("%w: n %d plus reserve %d exceeds burst %d: raise the burst", ErrInvalid, n, r.Reserve, r.Burst)
	}
	return nil
}

// wholeTokens rounds a token count down, forgiving float noise just below an integer.
func wholeTokens(tokens float64) int {
	if tokens <= 0 {
		return 0
	}
	return int(math.Floor(tokens + 1e-9))
}

// durationForTokens is how long rate needs to produce tokens, rounded up.
func durationForTokens(tokens, rate float64) time.Duration {
	if tokens <= 0 {
		return 0
	}
	d := math.Ceil(tokens / rate * float64(time.Second))
	if d >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}
