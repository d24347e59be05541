// Package limit provides the admission primitives of the call pipeline:
// token-bucket rate limits per key, priorities on a shared bucket, and
// concurrency bulkheads. It knows nothing of calls or vendors; package hub
// wraps these primitives as middlewares.
//
// # Rate limits
//
// A [Limiter] takes n tokens from the bucket of a key under a [Rule] (rate
// per second, burst) and answers with a [Decision]: admitted or not, how many
// whole tokens remain, and for a refusal how long until the same request
// would be admitted. A refusal is a decision, not an error; [Decision.Err]
// turns it into a [*LimitedError] matching [ErrRateLimited].
//
// Implementations, all passing one contract test suite:
//
//   - [Local]: in-process token buckets (golang.org/x/time/rate's arithmetic) in 64 shards keyed by
//     a hash of the key, so keys rarely contend; buckets that have refilled
//     are dropped, as they carry no state. The embedded default.
//   - hub/limit/redislimit: GCRA in one Lua script on the Redis server's clock. Several
//     processes sharing a Redis and a prefix admit the rule's rate together.
//   - [Fallback]: wraps a shared limiter; while it is unreachable, applies
//     local limits at 1/N of each rule (or admits, or refuses: [FallbackMode]),
//     logs the switch once each way, and probes in the background at most
//     once per second until the primary answers.
//
// # Priority and headroom
//
// [Priority] admits classes of calls against the same bucket with different
// thresholds, expressed as tokens a call must leave behind ([Rule.Reserve]):
// batch first attempts must leave 70% of the burst, batch retries 40%,
// interactive first attempts the headroom of 30%, and interactive retries
// may empty the bucket. As a key nears saturation, classes are refused in
// that order: batch before interactive, first attempts before retries.
// While first attempts saturate a key, the bucket hovers at the headroom:
// retries find up to 30% of the burst at once and, while they keep coming,
// take the refill below it first. The headroom is a depth reserved in the
// bucket, not a separate rate: with no retries, first attempts still get the
// full rate, and a class alone on a key gets the full rate too, only a
// smaller burst. Shares are rounded down to whole tokens, so buckets with a
// burst of 3 or less have no headroom.
//
// # Bulkheads
//
// A [Bulkhead] bounds calls in flight; [Bulkheads] holds one per key.
// Acquire waits at most a short, bounded time for a slot and then fails
// with [ErrOverloaded]; it starts no goroutine.
//
// # Usage
//
//	shared := redislimit.New(redisClient, &redislimit.Options{Prefix: "toolhub:limit:"})
//	lim := limit.Priority{Limiter: limit.NewFallback(shared, &limit.FallbackOptions{Instances: 3, Logger: log})}
//
//	d, err := lim.Allow(ctx, "tenant-a/weather", limit.Rule{Rate: 50, Burst: 10}, 1, limit.Class{Retry: attempt > 0})
//	if err != nil {
//		return err // limiter could not decide, or the rule is invalid
//	}
//	if !d.Allowed {
//		return d.Err() // matches limit.ErrRateLimited; RetryAfter() says when
//	}
//	release, err := bulkheads.Acquire(ctx, "weather", 16, 50*time.Millisecond)
//	if err != nil {
//		return err // limit.ErrOverloaded, or ctx's error
//	}
//	defer release()
package limit
