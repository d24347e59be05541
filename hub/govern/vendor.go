package govern

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/breaker"
	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/hub/retry"
)

// VendorMiddleware governs each attempt at one vendor tool (install it in
// [hub.Options].Vendor). In order:
//
//  1. active health: an ejected vendor fails fast with unavailable
//     ("vendor ejected by health probe"); during its recovery ramp, calls
//     beyond the ramp's share are skipped;
//  2. the breaker's recovery ramp: calls beyond its share are skipped;
//  3. the breaker: an open circuit fails fast with circuit_open and a
//     RetryAfter;
//  4. retries ([retry.Do]) around each try of:
//     the tenant×vendor rate limit (key "tv:"+tenant+"/"+vendor, when
//     [Options.TenantRule] gives one) then the vendor's (key "v:"+vendor),
//     both priority-aware (batch calls yield, retries use the headroom),
//     refusing with rate_limited and a RetryAfter; then the vendor's
//     concurrency bulkhead (overloaded after [Options.BulkheadWait]); then
//     the upstream.
//
// A queued job's call (Meta[hub.MetaJobID]) is not held to the ramps'
// share, nor counted in it: it is the backlog, bounded by the job workers
// and the vendor's limits, and its failure still drops the ramps back.
//
// A skipped call (steps 1–2) fails with circuit_open, Details
// {"reason": "ramp"}: not a vendor fault, so a capability chain moves to its
// next vendor and nothing counts against the vendor. Every refusal of
// toolhub's own matches [ErrRefused].
//
// The breaker sees one outcome per governed attempt (after its retries):
// Success for a result; Failure for a vendor fault ([hub.VendorFault]:
// timeout, unavailable, upstream_error, invalid_output) or for a result the
// tool itself marks IsError (a vendor whose tool keeps reporting errors is
// unhealthy to route to) unless it marks the error final (the vendor
// answered: [hub.MetaFinal]); Ignored for the caller's cancellation, toolhub's
// own refusals and everything else (the vendor's own 429, bad arguments).
//
// Which errors are retried is [Classify]'s call. c.Attempt is set to the
// 1-based try; every decision is noted in c.Trace.
func (g *Governor) VendorMiddleware() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			return g.govern(ctx, c, next)
		})
	}
}

func (g *Governor) govern(ctx context.Context, c *hub.Call, next hub.Invoker) (*hub.Result, error) {
	v := c.Vendor()
	vs := g.state(v)

	// A queued job's call is the backlog, not interactive traffic: the
	// recovery ramps do not count it against their share (the job pool's
	// workers and the vendor's limits bound it; a failure still drops the
	// ramps back and counts at the breaker), and a job that finds its
	// vendor down is noted, so the vendor is pinged while it waits.
	_, job := c.Meta[hub.MetaJobID]
	if job && breaker.State(vs.state.Load()) != breaker.Closed {
		vs.jobWaitAt.Store(g.now().UnixNano())
	}

	// 1. Active health.
	h, trial, err := g.admitHealth(c, v, vs, job)
	if err != nil {
		return nil, err
	}
	// 2–3b. The breakers: the vendor's ramp and circuit, the tool's circuit.
	t, err := g.admitBreakers(c, v, vs, job)
	if err != nil {
		return nil, err
	}
	trial = trial || t.trial
	// 4. Retries around limits, bulkhead and the upstream.
	res, err := g.attempts(ctx, c, vs, next)

	o := outcome(ctx, res, err)
	t.done(o)
	if o == breaker.Failure && h != nil {
		h.Ramp().Failure()
	}
	if trial && o == breaker.Success {
		h.Record(nil) // as a good probe: re-admits the vendor
	}
	if err != nil {
		return nil, governedError(err, trial)
	}
	return res, nil
}

// admitHealth is step 1: an ejected vendor fails fast, unless a job's call
// is let past as the trial; calls beyond the recovery ramp's share are
// skipped. h is the vendor's health tracker (nil without probes).
func (g *Governor) admitHealth(c *hub.Call, v string, vs *vendorState, job bool) (h *breaker.Health, trial bool, err error) {
	h = vs.health.Load()
	if h == nil {
		return nil, false, nil
	}
	if h.Ejected() && g.jobTrials(c) && h.TrialEvery(g.jobTrialEvery()) {
		c.Trace.Decide("health " + v + " ejected: a job's call is the trial")
		trial = true
	} else if h.Ejected() {
		if job {
			vs.jobWaitAt.Store(g.now().UnixNano())
		}
		c.Trace.Decide("health " + v + " ejected")
		return h, false, &hub.Error{Code: hub.CodeUnavailable, Vendor: v, Err: ErrRefused, Details: map[string]any{"reason": "ejected"},
			Message: fmt.Sprintf("vendor %q ejected by health probe; calls resume when a probe succeeds", v)}
	}
	if !trial && !job && !h.Ramp().Admit() {
		return h, false, g.skip(c, v, h.Ramp())
	}
	return h, trial, nil
}

// tickets are a governed attempt's admissions at the breakers: the
// vendor's, and the tool's where one is configured. trial is set when a
// job's call was let into an open circuit as its trial.
type tickets struct {
	vendor, tool breaker.Ticket
	hasTool      bool
	trial        bool
}

// done gives each breaker the attempt's outcome.
func (t *tickets) done(o breaker.Outcome) {
	t.vendor.Done(o)
	if t.hasTool {
		t.tool.Done(o)
	}
}

// admitBreakers is steps 2 to 3b: the breaker's recovery ramp, the
// vendor's breaker (a queued job's call may be an open circuit's trial) and
// the tool's own breaker, where configured.
func (g *Governor) admitBreakers(c *hub.Call, v string, vs *vendorState, job bool) (tickets, error) {
	var t tickets
	// 2. The breaker's recovery ramp.
	b := vs.breaker
	if !job && !b.Ramp().Admit() {
		return t, g.skip(c, v, b.Ramp())
	}
	// 3. The breaker.
	ticket, err := b.Admit()
	if oe, ok := err.(*breaker.OpenError); ok && oe.State == breaker.Open && g.jobTrials(c) && b.TrialEvery(g.jobTrialEvery()) {
		// A queued job may wait: its call is the half-open circuit's trial,
		// so the job finds the vendor's recovery by itself.
		c.Trace.Decide("breaker " + v + " open: a job's call is the trial")
		t.trial = true
		ticket, err = b.Admit()
	}
	if err != nil {
		return t, openError(c, v, "vendor "+strconv.Quote(v), err)
	}
	t.vendor = ticket
	c.Trace.Decide(vs.breakerDecision(breaker.State(vs.state.Load())))
	// 3b. The tool's own breaker, where configured.
	if g.o.ToolBreaker != nil && g.o.ToolBreaker(c.Tool) {
		key := v + "/" + c.Tool.Def.Name
		toolTicket, err := g.breakers.Get(key).Admit()
		if err != nil {
			ticket.Done(breaker.Ignored)
			return t, openError(c, key, "tool "+key, err)
		}
		t.tool, t.hasTool = toolTicket, true
	}
	return t, nil
}

// attempts is step 4: retries ([retry.Do]) around each try of the rate
// limits, the bulkhead and the upstream. The policy is the governor's, with
// the tool's idempotency and attempt timeout, [Classify]'s classes, and
// every retry counted and noted in the trace.
func (g *Governor) attempts(ctx context.Context, c *hub.Call, vs *vendorState, next hub.Invoker) (*hub.Result, error) {
	p := g.o.Retry
	p.Idempotent = g.idempotent(c.Tool)
	if g.o.AttemptTimeout != nil {
		p.AttemptTimeout = g.o.AttemptTimeout(c.Tool)
	}
	p.Classify = func(err error) retry.Class { return classify(err, p.Cap) }
	user := g.o.Retry.OnRetry
	p.OnRetry = func(attempt int, err error, wait time.Duration) {
		vs.retries.Inc()
		c.Trace.Decide("retry " + strconv.Itoa(attempt+1) + " after " + wait.Round(time.Millisecond).String() + ": " + string(hub.CodeOf(err)))
		if user != nil {
			user(attempt, err, wait)
		}
	}
	var res *hub.Result
	err := retry.Do(ctx, p, func(ctx context.Context, attempt int) error {
		c.Attempt = attempt + 1
		if err := g.admit(ctx, c, vs, attempt); err != nil {
			return err
		}
		bulk, err := g.acquire(ctx, c, vs)
		if err != nil {
			return err
		}
		vs.inflight.Add(1)
		vs.inflightG.Inc()
		r, err := next.Invoke(ctx, c)
		vs.inflightG.Dec()
		vs.inflight.Add(-1)
		if bulk != nil {
			bulk.Leave()
		}
		res = r
		if he, ok := err.(*hub.Error); ok && he.RetryAfter > 0 {
			return waitError{he} // so retry.Do honours the vendor's wait
		}
		return err
	})
	return res, err
}

// governedError is the error a governed attempt answers: the [hub.Error]
// without retry's ErrAttemptTimeout wrapping; a failed trial's marked
// Details {"reason": "trial"}, so the job waits for its vendor as for an
// open breaker (jobs.DefaultVendorsDown), spending no attempt.
func governedError(err error, trial bool) error {
	he, ok := errors.AsType[*hub.Error](err)
	if !ok {
		return err
	}
	if !trial {
		return he
	}
	te := *he
	d, _ := he.Details.(map[string]any)
	d = maps.Clone(d)
	if d == nil {
		d = map[string]any{}
	}
	d["reason"] = "trial"
	te.Details = d
	return &te
}

// openError is the answer of an open breaker: at once, with when to retry.
func openError(c *hub.Call, key, what string, err error) error {
	var wait time.Duration
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		wait = oe.Wait
	}
	c.Trace.Decide("breaker " + key + " open")
	return &hub.Error{Code: hub.CodeCircuitOpen, Vendor: c.Vendor(), RetryAfter: wait,
		Message: fmt.Sprintf("%s is failing; its circuit is open, retry in %v", what, wait.Round(time.Millisecond)),
		Err:     fmt.Errorf("%w: %w", ErrRefused, err)}
}

// skip refuses a call a recovery ramp does not admit.
func (g *Governor) skip(c *hub.Call, v string, r *breaker.Ramp) error {
	pct := strconv.FormatFloat(r.Step().Fraction*100, 'f', -1, 64) + "%"
	c.Trace.Decide("ramp " + v + " skipped at " + pct)
	return &hub.Error{Code: hub.CodeCircuitOpen, Vendor: v, Err: ErrRefused,
		Details: map[string]any{"reason": "ramp", "percent": r.Step().Fraction * 100},
		Message: fmt.Sprintf("vendor %q is recovering and takes %s of calls; this one goes elsewhere", v, pct)}
}

// admit applies the tenant×vendor and the vendor rate limits.
func (g *Governor) admit(ctx context.Context, c *hub.Call, vs *vendorState, attempt int) error {
	class := limit.Class{Batch: c.Priority == hub.Batch, Retry: attempt > 0}
	if g.o.TenantRule != nil {
		if r, ok := g.o.TenantRule(c.Tenant); ok {
			tk := vs.tenant(c.Tenant)
			if err := g.take(ctx, c, vs, tk.key, tk.ok, scopeTenantVendor, r, class); err != nil {
				return err
			}
		}
	}
	if r, ok := vendorRule(g.limits(vs.id)); ok {
		return g.take(ctx, c, vs, vs.rateKey, vs.rateOK, scopeVendor, r, class)
	}
	return nil
}

// take takes one token of key's bucket; allowed is the decision noted
// when it is given ("rate <key> allowed").
func (g *Governor) take(ctx context.Context, c *hub.Call, vs *vendorState, key, allowed, scope string, r limit.Rule, class limit.Class) error {
	d, err := g.prio.Allow(ctx, key, r, 1, class)
	if err != nil {
		// The limiter could not decide (a shared store is down and its
		// fallback fails closed, or the rule is invalid): refuse, locally.
		c.Trace.Decide("rate " + key + " error")
		return &hub.Error{Code: hub.CodeUnavailable, Vendor: vs.id, Err: fmt.Errorf("%w: %w", ErrRefused, err),
			Message: fmt.Sprintf("rate limiter for %q could not decide: %v", key, err)}
	}
	if !d.Allowed {
		vs.rejections.Add(1)
		g.m.rejection(scope).Inc()
		c.Trace.Decide("rate " + key + " refused " + c.Priority.String())
		return &hub.Error{Code: hub.CodeRateLimited, Vendor: vs.id, RetryAfter: d.RetryAfter,
			Err:     fmt.Errorf("%w: %w", ErrRefused, d.Err()),
			Message: fmt.Sprintf("rate limit %s reached; retry after %v", key, d.RetryAfter.Round(time.Millisecond))}
	}
	c.Trace.Decide(allowed)
	return nil
}

// acquire takes a slot of the vendor's bulkhead, which the caller leaves
// when the attempt is over; nil (and no error) when its concurrency is
// unlimited. The bulkhead is made on first use and again when the limit
// changes (calls in flight leave the old one).
func (g *Governor) acquire(ctx context.Context, c *hub.Call, vs *vendorState) (*limit.Bulkhead, error) {
	n := g.limits(vs.id).Concurrency
	if n <= 0 {
		return nil, nil
	}
	b := vs.bulk.Load()
	for b == nil || b.Max() != n {
		nb := limit.NewBulkhead(n)
		if vs.bulk.CompareAndSwap(b, nb) {
			b = nb
			break
		}
		b = vs.bulk.Load()
	}
	if err := b.Enter(ctx, max(g.o.BulkheadWait, 0)); err != nil {
		if ctx.Err() != nil {
			return nil, hub.AsError(ctx.Err())
		}
		vs.rejections.Add(1)
		g.m.rejection(scopeBulkhead).Inc()
		c.Trace.Decide("bulkhead " + vs.id + " full")
		return nil, &hub.Error{Code: hub.CodeOverloaded, Vendor: vs.id, Err: fmt.Errorf("%w: %w", ErrRefused, err),
			Message: fmt.Sprintf("vendor %q has %d calls in flight, its limit; try again shortly", vs.id, n)}
	}
	return b, nil
}

// outcome is what an attempt says of the vendor, for its breaker.
func outcome(ctx context.Context, r *hub.Result, err error) breaker.Outcome {
	switch {
	case err == nil && r != nil && r.IsError && !r.Final:
		return breaker.Failure
	case err == nil:
		return breaker.Success
	case ctx.Err() != nil, errors.Is(err, ErrRefused), hub.IsHubState(err):
		return breaker.Ignored
	case hub.VendorFault(hub.CodeOf(err)):
		return breaker.Failure
	}
	return breaker.Ignored
}

// Classify says whether an attempt's error is worth a retry. maxWait is
// the policy's Cap (zero: 30s). In order:
//
//   - toolhub's own refusals ([ErrRefused]) and the caller's cancellation:
//     [retry.Permanent] — a capability chain moves on at once instead;
//   - connection refused or a failed dial: [retry.Unsent] (retried even
//     for a tool that is not idempotent);
//   - a vendor that asks to wait longer than maxWait (Retry-After):
//     [retry.Permanent] — never a hang;
//   - an HTTP status: 429 and 5xx except 501 [retry.Transient], others
//     [retry.Permanent];
//   - codes timeout, unavailable and rate_limited (the vendor's):
//     [retry.Transient];
//   - anything else — upstream_error (a JSON-RPC error), invalid_output,
//     invalid_arguments, canceled, internal: [retry.Permanent].
func Classify(err error, maxWait time.Duration) retry.Class {
	return classify(err, maxWait)
}

func classify(err error, maxWait time.Duration) retry.Class {
	if maxWait <= 0 {
		maxWait = 30 * time.Second
	}
	if err == nil || errors.Is(err, ErrRefused) {
		return retry.Permanent
	}
	code := hub.CodeOf(err)
	if code == hub.CodeCanceled {
		return retry.Permanent
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return retry.Unsent
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return retry.Unsent
	}
	var ra retry.RetryAfter
	if errors.As(err, &ra) && ra.RetryAfter() > maxWait {
		return retry.Permanent
	}
	if he, ok := errors.AsType[*hub.Error](err); ok && he.RetryAfter > maxWait {
		return retry.Permanent
	}
	var s retry.HTTPStatus
	if errors.As(err, &s) {
		switch st := s.HTTPStatus(); {
		case st == 429, st >= 500 && st != 501:
			return retry.Transient
		}
		return retry.Permanent
	}
	switch code {
	case hub.CodeTimeout, hub.CodeUnavailable, hub.CodeRateLimited:
		return retry.Transient
	}
	if errors.Is(err, retry.ErrAttemptTimeout) {
		return retry.Transient
	}
	return retry.Permanent
}

// waitError exposes a *hub.Error's RetryAfter field through the method
// retry.Do looks for.
type waitError struct{ e *hub.Error }

func (w waitError) Error() string             { return w.e.Error() }
func (w waitError) Unwrap() error             { return w.e }
func (w waitError) RetryAfter() time.Duration { return w.e.RetryAfter }

// jobTrials reports whether c is a queued job's call that may be the trial
// of its vendor's open breaker or ejection ([Options.JobTrialEvery]).
func (g *Governor) jobTrials(c *hub.Call) bool {
	if g.o.JobTrialEvery < 0 {
		return false
	}
	_, job := c.Meta[hub.MetaJobID]
	return job
}

func (g *Governor) jobTrialEvery() time.Duration {
	if g.o.JobTrialEvery > 0 {
		return g.o.JobTrialEvery
	}
	return DefaultJobTrialEvery
}

// DefaultJobTrialEvery is how often, by default, a queued job's call may go
// to a vendor whose breaker is open or that its probes ejected, as the
// trial that finds its recovery.
const DefaultJobTrialEvery = time.Second
