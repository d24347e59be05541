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
	h := vs.health.Load()
	trial := false // a job's call let past its vendor's ejection
	if h != nil {
		if h.Ejected() && g.jobTrials(c) && h.TrialEvery(g.jobTrialEvery()) {
			c.Trace.Decide("health " + v + " ejected: a job's call is the trial")
			trial = true
		} else if h.Ejected() {
			if job {
				vs.jobWaitAt.Store(g.now().UnixNano())
			}
			c.Trace.Decide("health " + v + " ejected")
			return nil, &hub.Error{Code: hub.CodeUnavailable, Vendor: v, Err: ErrRefused, Details: map[string]any{"reason": "ejected"},
				Message: fmt.Sprintf("vendor %q ejected by health probe; calls resume when a probe succeeds", v)}
		}
		if !trial && !job && !h.Ramp().Admit() {
			return nil, g.skip(c, v, h.Ramp())
		}
	}
	// 2. The breaker's recovery ramp.
	b := vs.breaker
	if !job && !b.Ramp().Admit() {
		return nil, g.skip(c, v, b.Ramp())
	}
	// 3. The breaker.
	ticket, err := b.Admit()
	if oe, ok := err.(*breaker.OpenError); ok && oe.State == breaker.Open && g.jobTrials(c) && b.TrialEvery(g.jobTrialEvery()) {
		// A queued job may wait: its call is the half-open circuit's trial,
		// so the job finds the vendor's recovery by itself.
		c.Trace.Decide("breaker " + v + " open: a job's call is the trial")
		trial = true
		ticket, err = b.Admit()
	}
	if err != nil {
		return nil, openError(c, v, "vendor "+strconv.Quote(v), err)
	}
	c.Trace.Decide(vs.breakerDecision(breaker.State(vs.state.Load())))
	// 3b. The tool's own breaker, where configured.
	var toolTicket breaker.Ticket
	toolBreaker := g.o.ToolBreaker != nil && g.o.ToolBreaker(c.Tool)
	if toolBreaker {
		key := v + "/" + c.Tool.Def.Name
		toolTicket, err = g.breakers.Get(key).Admit()
		if err != nil {
			ticket.Done(breaker.Ignored)
			return nil, openError(c, key, "tool "+key, err)
		}
	}

	// 4. Retries around limits, bulkhead and the upstream.
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
	err = retry.Do(ctx, p, func(ctx context.Context, attempt int) error {
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

	o := outcome(ctx, res, err)
	ticket.Done(o)
	if toolBreaker {
		toolTicket.Done(o)
	}
	if o == breaker.Failure && h != nil {
		h.Ramp().Failure()
	}
	if trial && o == breaker.Success {
		h.Record(nil) // as a good probe: re-admits the vendor
	}
	if err != nil {
		if he, ok := errors.AsType[*hub.Error](err); ok {
			if trial {
				// The vendor is still down: the job waits for it as for an
				// open breaker (jobs.DefaultVendorsDown), spending no attempt.
				te := *he
				d, _ := he.Details.(map[string]any)
				d = maps.Clone(d)
				if d == nil {
					d = map[string]any{}
				}
				d["reason"] = "trial"
				te.Details = d
				return nil, &te
			}
			return nil, he // drop retry's ErrAttemptTimeout wrapping
		}
		return nil, err
	}
	return res, nil
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
