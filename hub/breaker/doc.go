// Package breaker protects the hub from failing upstreams and returns
// traffic to them slowly: circuit breakers fed by call outcomes (passive
// health), an ejection tracker fed by probes (active health), and a
// recovery ramp. It knows nothing of calls or vendors; package hub wraps
// these primitives as middlewares.
//
// # Circuit breaker
//
// A [Breaker] guards one key — a vendor, or a vendor's tool where that tool
// needs its own; a [Set] holds one per key. It moves between three states:
//
//   - [Closed]: calls go through; their outcomes fill a sliding window
//     (10 buckets of 1s). It opens when failures reach 50% of at least 20
//     calls in the window, or after 5 failures in a row.
//   - [Open]: calls are refused at once with an [*OpenError] (matching
//     [ErrOpen]) that says how long until the cool-down ends. The first
//     cool-down is 30s; each trip after it doubles it, up to 120s; after 5
//     minutes closed without a trip it starts over at 30s.
//   - [HalfOpen]: after the cool-down, 3 trial calls go through (others are
//     refused); if all succeed the circuit closes, if any fails it opens
//     again with the next cool-down.
//
// [Breaker.Allow] returns a done function to call with the call's
// [Outcome]: [Success], [Failure], or [Ignored] for outcomes that say
// nothing of the upstream (the caller cancelled, arguments were invalid,
// a rate limit refused it). Outcomes of calls admitted before a state
// change are dropped. A closed circuit admits without taking a lock.
// OnStateChange reports every change; [Breaker.Snapshot] serves the status
// API; [Breaker.Trip] and [Breaker.Reset] are operator switches.
//
// # Recovery ramp
//
// A [Ramp] returns traffic to a recovered upstream in steps — 5%, 25%, 50%,
// then 100% — each after 30s without a failure; a failure during the ramp
// drops it back to 5%. The fraction is exact and deterministic (a counter,
// not a coin), so tests assert exact counts. A call the ramp does not admit
// is not a failure of the upstream: it goes to the next vendor of the chain.
// Steps are time-based: a quiet interval counts as a stable one.
//
// Every [Breaker] owns one ([Breaker.Ramp]), started when its circuit
// closes after a trip; failures recorded while closed drop it back. A
// [Health] tracker owns another, started on re-admission.
//
// # Active health
//
// A [Health] tracker ejects an upstream after 3 probe failures in a row and
// re-admits it on the next successful probe, starting its ramp.
// [RunProbes] drives a [Prober] on an interval; the probe itself (a cheap,
// real tool call) is the caller's.
//
// # Usage
//
//	breakers := breaker.NewSet(func(key string) *breaker.Options {
//		return &breaker.Options{OnStateChange: metrics.breakerChanged}
//	})
//
//	b := breakers.Get("weather-a")
//	if !b.Ramp().Admit() {
//		return errSkip // recovering: the chain sends this call to its next vendor
//	}
//	done, err := b.Allow()
//	if err != nil {
//		return err // matches breaker.ErrOpen; RetryAfter() says when
//	}
//	res, err := upstream.Invoke(ctx, call)
//	done(outcomeOf(err)) // breaker.Success, breaker.Failure or breaker.Ignored
package breaker
