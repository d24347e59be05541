// Package jobs is toolhub's durable async queue: a call that nothing can
// answer now becomes a [Job], workers run it later through the gateway,
// retrying with backoff, and every status change is an [Event] pushed to
// the caller (WebSocket in package api, or a signed [Webhooks] POST).
//
// A job goes queued → running → succeeded | failed (a permanent error, or
// its deadline passed: see [Pool].Deadline); a retry goes running → queued
// (NextAt later, capped backoff with jitter) → running. A run that no
// vendor could take (breakers open, vendors ejected) goes running →
// waiting, gives its attempt back, and is woken ([Pool.Wake], on every
// instance) when a vendor can take traffic again.
// A parked job starts as needs_review and an operator approves it (→ queued)
// or rejects it (→ rejected); a queued job can be canceled.
//
// Two [Store]s, each in a package of its own, pass one contract suite
// (hub/jobs/jobstest): sqlitejobs (embedded; claims are one
// UPDATE … RETURNING with a lease) and redisjobs (shared; Redis Streams with a
// consumer group, XAUTOCLAIM to take over a dead worker's job, state and
// events changed together by Lua scripts). Event ids grow monotonically over
// a store, so a subscriber resumes after the last id it saw.
//
// Exactly-once completion, at-least-once execution: a worker holds a lease
// it renews while the call runs; a dead worker's lease expires and another
// worker claims the job; finishing is a compare-and-set on the lease owner,
// so a late finisher changes nothing ([ErrLeaseLost]). The vendor call may
// still run twice (the worker died after the vendor answered, before it
// finished the job), so the call carries Meta[MetaIdempotencyKey] = job id.
//
// Wiring:
//
//	store, _ := sqlitejobs.Open(ctx, filepath.Join(data, "jobs.db"), nil) // or redisjobs.New(ctx, rdb, nil)
//	q := jobs.NewQueue(store, &jobs.Options{ResultTTL: 24 * time.Hour})
//	pool := &jobs.Pool{Store: q, Run: gw.Call, Concurrency: 8}
//	pool.Start(ctx)
//	defer pool.Stop(shutdownCtx)
//	// q.Enqueue and q.Park are the fallback chain's Enqueuer and Parker.
package jobs
