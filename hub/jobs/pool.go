package jobs

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/retry"
)

// Pool runs jobs: Concurrency workers claim jobs from Store, run them with
// Run (the gateway), retry failures with exponential backoff, and finish
// them. Zero fields mean the defaults.
//
// A job completes exactly once: a worker holds a lease it renews while Run
// runs; if it dies, the lease expires and another worker (here or on
// another instance) claims the job again, and completing is a
// compare-and-set on the lease owner, so a late finisher gets
// [ErrLeaseLost] and changes nothing. The vendor call itself is
// at-least-once: a worker that dies after the vendor answered but before
// it finished the job leaves the job to be run again. So the call carries
// the job id in Meta[MetaIdempotencyKey] for vendors that deduplicate.
type Pool struct {
	// Store holds the jobs; give a [*Queue] so local subscribers hear of
	// changes at once.
	Store Store
	// Run runs one call: the gateway's Call.
	Run func(ctx context.Context, c *hub.Call) (*hub.Result, error)
	// Concurrency is the number of workers; zero means 4.
	Concurrency int
	// Deadline is how long a job of a tool (catalog name) lives from its
	// creation: it is tried until then, and fails when its deadline
	// passes. Nil, or a zero result, means [DefaultDeadline].
	Deadline func(tool string) time.Duration
	// MaxAttempts, when positive, also fails a job after that many tries
	// that reached a vendor; zero means no limit but the deadline.
	MaxAttempts int
	// Backoff spaces the tries: Backoff.Backoff(n) before try n+2, or a
	// longer Retry-After from the error. Zero means 1s doubling to a cap
	// of 30s, full jitter.
	Backoff retry.Policy
	// Retryable says whether an error is worth another try; nil means
	// every error except the caller's mistakes and refusals
	// (invalid_arguments, unknown_tool, forbidden, budget_exceeded, …).
	// Errors that are not retryable fail the job at once.
	Retryable func(error) bool
	// VendorsDown says whether an error means that no vendor of the job's
	// chain can take the call now (breakers open, vendors ejected,
	// recovery ramps skipping it), and
	// the longest it should wait before trying on its own (zero: MaxWait).
	// Such a job waits (status Waiting, its attempt given back) until
	// [Pool.Wake] or that time. Nil means [DefaultVendorsDown].
	VendorsDown func(error) (wait time.Duration, down bool)
	// MaxWait bounds how long a waiting job sleeps before it looks again
	// by itself (its call may then be its vendor's breaker trial: see
	// govern's JobTrialEvery), in case no wake comes; zero means
	// [DefaultMaxWait], 2s.
	MaxWait time.Duration
	// Lease is how long a claim lasts without renewal; zero means 30s.
	// Workers renew at a third of it.
	Lease time.Duration
	// Timeout bounds one run; zero means no bound beyond the lease renewals.
	Timeout time.Duration
	// Poll is how often an idle worker looks for work; zero means 500ms.
	Poll time.Duration
	// ResultTTL is how long a final job is kept; zero means 24h.
	ResultTTL time.Duration
	// PurgeEvery is how often final jobs past their TTL are purged; zero
	// means 1m, negative never.
	PurgeEvery time.Duration
	// Owner names this pool in leases; empty means a random id.
	Owner string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil means slog.Default().
	Logger *slog.Logger

	wakes atomic.Int64 // counts wakes seen here, so a run that raced one does not sleep through it

	dueMu      sync.Mutex
	due        dueHeap     // when jobs this pool left waiting or queued become due
	dueTimer   *time.Timer // fires at due[0]
	dueStopped bool

	mu      sync.Mutex
	started bool
	stop    context.CancelFunc // stops claiming
	kill    context.CancelFunc // cancels running jobs
	wg      sync.WaitGroup
	wake    chan struct{}
}

// Start starts the workers. Canceling ctx kills the pool the way a crash
// would: running jobs are abandoned, unfinished, to lease expiry and
// another worker. Stop is the graceful way.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("jobs: pool already started")
	}
	if p.Store == nil || p.Run == nil {
		return errors.New("jobs: pool needs a Store and a Run func")
	}
	p.started = true
	p.defaults()
	p.wake = make(chan struct{}, p.Concurrency)
	runCtx, kill := context.WithCancel(ctx)
	claimCtx, stop := context.WithCancel(runCtx)
	p.stop, p.kill = stop, kill
	// Subscribed to other instances' wakes before the workers first look
	// for work: a wake made after that look is heard.
	if w, ok := p.Store.(Waker); ok {
		p.subscribe(ctx, claimCtx, w)
	}
	for i := range p.Concurrency {
		p.wg.Add(1)
		go p.worker(claimCtx, runCtx, fmt.Sprintf("%s/%d", p.Owner, i))
	}
	if p.PurgeEvery > 0 {
		p.wg.Add(1)
		go p.purger(claimCtx)
	}
	if q, ok := p.Store.(*Queue); ok {
		p.wg.Add(1)
		go p.listen(claimCtx, q)
	}
	return nil
}

// defaults fills in the pool's unset fields.
func (p *Pool) defaults() {
	if p.Concurrency <= 0 {
		p.Concurrency = 4
	}
	if p.MaxWait <= 0 {
		p.MaxWait = DefaultMaxWait
	}
	if p.VendorsDown == nil {
		p.VendorsDown = DefaultVendorsDown
	}
	if p.Lease <= 0 {
		p.Lease = 30 * time.Second
	}
	if p.Poll <= 0 {
		p.Poll = 500 * time.Millisecond
	}
	if p.ResultTTL <= 0 {
		p.ResultTTL = 24 * time.Hour
	}
	if p.PurgeEvery == 0 {
		p.PurgeEvery = time.Minute
	}
	if p.Owner == "" {
		p.Owner = "pool-" + NewID()[4:16]
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	if p.Retryable == nil {
		p.Retryable = DefaultRetryable
	}
}

// subscribe starts listening to other instances' wakes (until claimCtx
// ends) and waits, at most subscribeWait or until ctx ends, for the
// subscription to hold.
func (p *Pool) subscribe(ctx, claimCtx context.Context, w Waker) {
	subscribed := make(chan struct{})
	var once sync.Once
	ready := func() { once.Do(func() { close(subscribed) }) }
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer ready()
		w.Wakes(claimCtx, ready, p.wakeWorkers)
	}()
	t := time.NewTimer(subscribeWait)
	select {
	case <-subscribed:
	case <-t.C:
		p.Logger.Warn("jobs: not yet subscribed to other instances' wakes; until then waiting jobs are looked at every poll", "waited", subscribeWait, "poll", p.Poll)
	case <-ctx.Done():
	}
	t.Stop()
}

// Wake makes every job waiting for a vendor due now, on every instance
// sharing the store, and returns how many it woke: call it when a vendor
// can take traffic again (a probe succeeded, a breaker lets trial calls
// through or closed).
func (p *Pool) Wake(ctx context.Context) (int, error) {
	p.wakes.Add(1) // jobs running now, refused, look again soon
	n, err := p.Store.Wake(ctx)
	if n > 0 {
		p.wakeWorkers()
	}
	return n, err
}

// wakeWorkers wakes the idle workers.
func (p *Pool) wakeWorkers() {
	p.wakes.Add(1)
	p.mu.Lock()
	wake := p.wake
	p.mu.Unlock()
	for range cap(wake) {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// Stop stops claiming jobs and waits for running ones to finish. When ctx
// ends first, it cancels them: their jobs are left to lease expiry.
func (p *Pool) Stop(ctx context.Context) error {
	p.mu.Lock()
	stop, kill := p.stop, p.kill
	p.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	p.dueMu.Lock()
	if p.dueTimer != nil {
		p.dueTimer.Stop()
	}
	p.due, p.dueStopped = nil, true
	p.dueMu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		kill()
		if f, ok := p.Store.(ownerForgetter); ok {
			for i := range p.Concurrency {
				if err := f.ForgetOwner(ctx, fmt.Sprintf("%s/%d", p.Owner, i)); err != nil {
					p.Logger.Warn("jobs: forget worker", "err", err)
				}
			}
		}
		return nil
	case <-ctx.Done():
		kill()
		<-done
		return ctx.Err()
	}
}

// listen wakes idle workers when the local queue changes.
func (p *Pool) listen(ctx context.Context, q *Queue) {
	defer p.wg.Done()
	changed := q.Changed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			// Subscribe again before waking the workers: a change made
			// meanwhile is either seen by them or wakes them again.
			changed = q.Changed()
			for range p.Concurrency {
				select {
				case p.wake <- struct{}{}:
				default:
				}
			}
		}
	}
}

func (p *Pool) purger(ctx context.Context) {
	defer p.wg.Done()
	t := time.NewTicker(p.PurgeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := p.Store.Purge(ctx); err != nil && ctx.Err() == nil {
				p.Logger.Warn("jobs: purge", "err", err)
			} else if n > 0 {
				p.Logger.Debug("jobs: purged", "jobs", n)
			}
		}
	}
}

func (p *Pool) worker(claimCtx, runCtx context.Context, owner string) {
	defer p.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		j, err := p.Store.Claim(claimCtx, owner, p.Lease)
		if err != nil && claimCtx.Err() == nil {
			p.Logger.Warn("jobs: claim", "owner", owner, "err", err)
		}
		if j != nil {
			p.handle(runCtx, owner, j)
			continue
		}
		t.Reset(p.Poll)
		select {
		case <-claimCtx.Done():
			return
		case <-p.wake:
		case <-t.C:
		}
	}
}

// handle runs one claimed job and finishes it.
func (p *Pool) handle(ctx context.Context, owner string, j *Job) {
	log := p.Logger.With("job", j.ID, "tool", j.Tool, "tenant", j.Tenant, "attempt", j.Attempts)
	// Finishing uses a context that outlives a graceful stop but not a kill.
	finish := func(out Outcome) {
		if ctx.Err() != nil {
			return // killed: as if the process died; the lease expires
		}
		if err := p.Store.Finish(ctx, j.ID, owner, out); err != nil {
			if errors.Is(err, ErrLeaseLost) {
				log.Warn("jobs: lease lost before finishing; another worker owns the job", "outcome", out.Status)
				return
			}
			log.Error("jobs: finish", "err", err)
		}
	}
	life := p.life(j)
	deadline := j.Created.Add(life)
	if p.MaxAttempts > 0 && j.Attempts > p.MaxAttempts {
		finish(Outcome{Status: Failed, Error: fmt.Sprintf("gave up after %d attempts (workers lost the job); last error: %s", p.MaxAttempts, j.LastError),
			KeepUntil: p.Now().Add(p.ResultTTL)})
		return
	}
	if !p.Now().Before(deadline) {
		finish(Outcome{Status: Failed, Error: deadlineError(life, j.LastError), KeepUntil: p.Now().Add(p.ResultTTL)})
		return
	}
	c, err := callOf(j)
	if err != nil {
		finish(Outcome{Status: Failed, Error: err.Error(), KeepUntil: p.Now().Add(p.ResultTTL)})
		return
	}
	wakes := p.wakes.Load()
	res, err := p.runLeased(ctx, owner, j, c)
	if ctx.Err() != nil {
		return
	}
	if err == nil && res.Provenance.Queued {
		// Run queued or parked the call instead of answering it (a
		// fallback chain that does not know it runs a job): not an answer.
		err = &hub.Error{Code: hub.CodeUnavailable, Message: "the call was queued again (as job " + res.Provenance.JobID + ") instead of answered"}
	}
	if err == nil {
		finish(p.answered(res))
		return
	}
	if errors.Is(err, ErrLeaseLost) {
		log.Warn("jobs: lease lost while running; another worker owns the job")
		return
	}
	out := p.failed(log, j, err, life, deadline, wakes)
	finish(out)
	if out.Status == Waiting || out.Status == Queued {
		p.wakeAt(out.NextAt)
	}
}

// life is how long a job of j's tool may take from its creation.
func (p *Pool) life(j *Job) time.Duration {
	if p.Deadline != nil {
		if d := p.Deadline(j.Tool); d > 0 {
			return d
		}
	}
	return DefaultDeadline
}

// answered is the outcome of a run that answered: the job succeeded, or
// failed at once with the answer when the vendor marked its tool error
// final.
func (p *Pool) answered(res *hub.Result) Outcome {
	b, err := EncodeResult(res)
	if err != nil {
		return Outcome{Status: Failed, Error: err.Error(), KeepUntil: p.Now().Add(p.ResultTTL)}
	}
	if res.IsError && res.Final {
		// The vendor marked its tool error final: the answer, and
		// the job's failure, at once (no retry, no waiting).
		return Outcome{Status: Failed, Result: b, Error: finalError(res), KeepUntil: p.Now().Add(p.ResultTTL)}
	}
	return Outcome{Status: Succeeded, Result: b, KeepUntil: p.Now().Add(p.ResultTTL)}
}

// failed is the outcome of a run that failed with err: the job fails
// (not retryable, out of attempts, or its deadline before the retry),
// waits for a vendor to be woken (no vendor could take the call), or is
// queued again after its backoff. wakes is the count of wakes seen when the
// run began.
func (p *Pool) failed(log *slog.Logger, j *Job, err error, life time.Duration, deadline time.Time, wakes int64) Outcome {
	msg := err.Error()
	if !p.Retryable(err) || (p.MaxAttempts > 0 && j.Attempts >= p.MaxAttempts) {
		if j.Attempts > 1 {
			msg = fmt.Sprintf("failed after %d attempts: %s", j.Attempts, msg)
		}
		return Outcome{Status: Failed, Error: msg, KeepUntil: p.Now().Add(p.ResultTTL)}
	}
	now := p.Now()
	if wait, down := p.VendorsDown(err); down {
		// No vendor could take the call: no vendor was tried, so the
		// attempt is given back, and the job waits to be woken.
		if wait <= 0 || wait > p.MaxWait {
			wait = p.MaxWait
		}
		if p.wakes.Load() != wakes {
			// A vendor came back while this run was refused: the wake
			// missed this job (it was running), so it looks again soon.
			wait = min(wait, RampWait)
		}
		// Spread the jobs waiting on one breaker over [wait/2, wait]: their
		// retries, which may be its trials, come one by one.
		wait = wait/2 + time.Duration(rand.Float64()*float64(wait)/2)
		next := now.Add(wait)
		if next.After(deadline) {
			next = deadline
		}
		log.Debug("jobs: waiting for a vendor", "err", msg, "until", next)
		return Outcome{Status: Waiting, Error: msg, NextAt: next}
	}
	wait := p.Backoff.Backoff(j.Attempts - 1)
	var he *hub.Error
	if errors.As(err, &he) && he.RetryAfter > wait {
		wait = he.RetryAfter
	}
	if !now.Add(wait).Before(deadline) {
		return Outcome{Status: Failed, Error: deadlineError(life, msg), KeepUntil: now.Add(p.ResultTTL)}
	}
	log.Info("jobs: retry", "err", msg, "wait", wait)
	return Outcome{Status: Queued, Error: msg, NextAt: now.Add(wait)}
}

// maxDue bounds the wake-ups a pool keeps; past it, jobs are found by the poll.
const maxDue = 4096

// wakeAt wakes the idle workers at t, when a job this pool left waiting
// or queued becomes due, rather than at their next poll (up to Poll
// later: a waiting job's retry, which may be its vendor's trial, would lag
// by as much).
func (p *Pool) wakeAt(t time.Time) {
	p.dueMu.Lock()
	defer p.dueMu.Unlock()
	if p.dueStopped || len(p.due) >= maxDue {
		return
	}
	heap.Push(&p.due, t)
	if p.due[0].Equal(t) {
		p.armLocked()
	}
}

// armLocked sets the timer to the earliest wake-up.
func (p *Pool) armLocked() {
	if len(p.due) == 0 {
		return
	}
	d := p.due[0].Sub(p.Now())
	if p.dueTimer == nil {
		p.dueTimer = time.AfterFunc(d, p.dueFired)
		return
	}
	p.dueTimer.Reset(d)
}

// dueFired wakes the idle workers for the jobs due now and sets the timer
// to the next wake-up.
func (p *Pool) dueFired() {
	p.dueMu.Lock()
	now := p.Now()
	woke := false
	// Only what is due now: a wake-up due even a moment later is a job
	// the store would not yet hand out (its next_at is in milliseconds),
	// so it keeps its own wake-up.
	for len(p.due) > 0 && !p.due[0].After(now) {
		heap.Pop(&p.due)
		woke = true
	}
	p.armLocked()
	p.dueMu.Unlock()
	if woke {
		for range p.Concurrency {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	}
}

// dueHeap is a min-heap of times, for container/heap.
type dueHeap []time.Time

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *dueHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// finalError is a job's error for a tool error its vendor marked final.
func finalError(r *hub.Result) string {
	msg := hub.TextOf(r)
	if msg == "" {
		msg = "no message"
	}
	who := r.Provenance.Vendor
	if r.Provenance.Tool != "" {
		who += "/" + r.Provenance.Tool
	}
	return fmt.Sprintf("%s answered with a tool error it marks final: %s", who, msg)
}

// DefaultDeadline is how long a job lives when [Pool].Deadline sets none.
const DefaultDeadline = 15 * time.Minute

func deadlineError(life time.Duration, last string) string {
	if last == "" {
		return fmt.Sprintf("the job's deadline passed (%v after it was queued)", life)
	}
	return fmt.Sprintf("the job's deadline passed (%v after it was queued); last error: %s", life, last)
}

// DefaultMaxWait is the longest a waiting job sleeps before it looks
// again by itself: a vendor's recovery is found within it even when no
// probe or breaker change wakes the job.
const DefaultMaxWait = 2 * time.Second

// RampWait is how long a job waits when recovering vendors' ramps skipped
// its call (they take a share of the calls, growing step by step).
const RampWait = 200 * time.Millisecond

// DefaultVendorsDown says that no vendor can take a call now when its
// error is an open breaker's refusal (circuit_open), an ejection by health
// probes, a recovery ramp's skip, the failure of a trial the job's call
// was (reason "trial"), or a capability's error whose every
// vendor error is one of those. wait is the shortest of their waits: an
// open breaker's Retry-After (when it lets a trial call through), zero
// for an ejection (until woken), [RampWait] for a ramp's skip.
func DefaultVendorsDown(err error) (time.Duration, bool) {
	e, ok := errors.AsType[*hub.Error](err)
	if !ok {
		return 0, false
	}
	switch {
	case reasonOf(e) == "trial":
		// The job's call was the trial of its vendor's open breaker or
		// ejection, and the vendor is still down: wait (the next trial is
		// govern.DefaultJobTrialEvery away).
		return 0, true
	case e.Code == hub.CodeCircuitOpen && reasonOf(e) == "ramp":
		// A recovering vendor takes a share of the calls: try again soon
		// (without spending an attempt), at the pace of the ramp.
		return RampWait, true
	case e.Code == hub.CodeCircuitOpen:
		return e.RetryAfter, true
	case e.Code == hub.CodeUnavailable && reasonOf(e) == "ejected":
		return 0, true
	case e.Code != hub.CodeUnavailable:
		return 0, false
	}
	joined, ok := e.Err.(interface{ Unwrap() []error })
	if !ok {
		return 0, false
	}
	errs := joined.Unwrap()
	var wait time.Duration
	for _, one := range errs {
		w, down := DefaultVendorsDown(one)
		if !down {
			return 0, false
		}
		if w > 0 && (wait == 0 || w < wait) {
			wait = w
		}
	}
	return wait, len(errs) > 0
}

// reasonOf is the "reason" of an error's Details (hub/govern says "ramp"
// for a recovery ramp's skip, "ejected" for an ejected vendor).
func reasonOf(e *hub.Error) string {
	if d, ok := e.Details.(map[string]any); ok {
		r, _ := d["reason"].(string)
		return r
	}
	return ""
}

// runLeased runs c while renewing the lease; it returns ErrLeaseLost if
// the lease could not be renewed (the run is then canceled).
func (p *Pool) runLeased(ctx context.Context, owner string, j *Job, c *hub.Call) (*hub.Result, error) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if p.Timeout > 0 {
		var c2 context.CancelFunc
		runCtx, c2 = context.WithTimeout(runCtx, p.Timeout)
		defer c2()
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(max(p.Lease/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-runCtx.Done():
				return
			case <-t.C:
				if err := p.Store.Renew(runCtx, j.ID, owner, p.Lease); errors.Is(err, ErrLeaseLost) {
					cancel(ErrLeaseLost)
					return
				}
			}
		}
	}()
	res, err := p.Run(runCtx, c)
	if errors.Is(context.Cause(runCtx), ErrLeaseLost) {
		return nil, ErrLeaseLost
	}
	if err == nil && res == nil {
		res = &hub.Result{}
	}
	return res, err
}

// callOf rebuilds the call of a job, with the job id as idempotency key.
func callOf(j *Job) (*hub.Call, error) {
	c := &hub.Call{Tenant: j.Tenant, Name: j.Tool, Priority: hub.Priority(j.Priority)}
	if len(j.Arguments) > 0 {
		if err := json.Unmarshal(j.Arguments, &c.Arguments); err != nil {
			return nil, fmt.Errorf("jobs: job %s: arguments: %w", j.ID, err)
		}
	}
	if len(j.Meta) > 0 {
		if err := json.Unmarshal(j.Meta, &c.Meta); err != nil {
			return nil, fmt.Errorf("jobs: job %s: meta: %w", j.ID, err)
		}
	}
	if c.Meta == nil {
		c.Meta = map[string]any{}
	}
	c.Meta[MetaJobID] = j.ID
	c.Meta[MetaIdempotencyKey] = j.ID
	return c, nil
}

// DefaultRetryable retries every error except the caller's own mistakes
// and toolhub's refusals, which another try would not change.
func DefaultRetryable(err error) bool {
	switch hub.CodeOf(err) {
	case hub.CodeInvalidRequest, hub.CodeInvalidArguments, hub.CodeUnknownTool, hub.CodeUnauthenticated,
		hub.CodeForbidden, hub.CodeTooLarge, hub.CodeBudgetExceeded, hub.CodePrivacy:
		return false
	}
	return true
}
