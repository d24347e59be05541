// Package retry retries failed calls with exponential backoff and full
// jitter, within the caller's deadline. It knows nothing of calls or
// vendors; package hub wraps [Do] as a middleware.
//
// [Do] calls a function until it succeeds or until retrying stops making
// sense:
//
//   - the error is not worth a retry: the [Policy]'s classifier (by
//     default [DefaultClassify]) says [Permanent], or says [Transient] for
//     a call that is not [Policy.Idempotent] — only [Unsent] errors (the
//     request provably never left) are retried for those;
//   - the retries are spent ([Policy.Max], 3 by default);
//   - the caller's context is done, or the next wait would reach its
//     deadline: Do never sleeps past it, and returns the last error at once.
//
// The wait before retry n is drawn uniformly from [0, min(Cap, Base·2ⁿ))
// (full jitter: 1s, 2s, 4s … ceilings capped at 30s by default). An error
// carrying a server's wait through a [RetryAfter] method (HTTP Retry-After,
// a rate limiter's refusal, an open breaker) makes Do wait at least that
// long. Errors state their nature through small interfaces — [Retryable],
// [RetryAfter], [HTTPStatus] — so packages need not import each other.
//
// An attempt that fails with [context.DeadlineExceeded] while the caller's
// context is live ran out of its own per-attempt deadline; Do wraps the
// error with [ErrAttemptTimeout], which the default classifier retries.
// The caller's own cancellation or deadline is never retried.
//
// Randomness, sleeping and the clock are injectable ([Policy.Rand],
// [Policy.Sleep], [Policy.Now]) so tests assert exact waits; the defaults
// also work under testing/synctest.
//
// # Usage
//
//	p := retry.Policy{Idempotent: tool.Idempotent, Cap: 10 * time.Second}
//	var res *Result
//	err := retry.Do(ctx, p, func(ctx context.Context, attempt int) error {
//		actx, cancel := context.WithTimeout(ctx, perAttempt)
//		defer cancel()
//		var err error
//		res, err = next.Invoke(actx, call) // attempt > 0: a retry, for priority headroom
//		return err
//	})
package retry
