package fallback

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// Enqueuer accepts a call as a durable job whose result is pushed later
// (hub/jobs satisfies it).
type Enqueuer interface {
	Enqueue(ctx context.Context, c *hub.Call) (jobID string, err error)
}

// Parker holds a high-risk call for human review (a job with status
// needs_review; hub/jobs satisfies it).
type Parker interface {
	Park(ctx context.Context, c *hub.Call, reason string) (jobID string, err error)
}

// QueuedText is the content of a queued answer.
const QueuedText = "processing; the result will be pushed"

// Options configure [New]. A nil *Options, and every zero field, means the
// default.
type Options struct {
	// Config holds the per-capability policies; replace it at run time
	// with [Router.SetConfig].
	Config Config
	// Stale returns the last known good answer to a call, marked stale
	// with its age (cache.Layer.LastKnownGood); nil means no stale step.
	Stale func(ctx context.Context, c *hub.Call) (*hub.Result, bool)
	// Enqueuer takes calls of queueable capabilities when everything else
	// failed; nil means no queue step.
	Enqueuer Enqueuer
	// Parker takes calls of high-risk capabilities while Degraded; nil
	// means such calls fail as unavailable.
	Parker Parker
	// Cost returns the cost of a chain step for a call, for the Cheapest
	// policy (it may look at the clock for off-peak prices); nil means
	// every step costs the same (chain order).
	Cost func(c *hub.Call, step registry.ChainStep) float64
	// Rand returns a number in [0, 1) for weighted choices and traffic
	// shares; nil means math/rand/v2.Float64.
	Rand func() float64
	// Modes tracks the degradation modes; nil means NewModes with Config
	// and Now.
	Modes *Modes
	// Now is the clock for attempt latencies; nil means time.Now.
	Now func() time.Time
}

// Router runs capability chains: vendors by policy and mode, then the last
// known good answer, then a queued job. Its [Router.Route] is the gateway's
// [hub.Options].Route. Safe for concurrent use.
type Router struct {
	cfg    atomic.Pointer[Config]
	stale  func(ctx context.Context, c *hub.Call) (*hub.Result, bool)
	enq    Enqueuer
	parker Parker
	cost   func(c *hub.Call, step registry.ChainStep) float64
	rand   func() float64
	modes  *Modes
	now    func() time.Time
}

// New returns a router.
func New(opts *Options) *Router {
	r := &Router{rand: rand.Float64, now: time.Now}
	var cfg Config
	if opts != nil {
		cfg = opts.Config
		r.stale, r.enq, r.parker, r.cost, r.modes = opts.Stale, opts.Enqueuer, opts.Parker, opts.Cost, opts.Modes
		if opts.Rand != nil {
			r.rand = opts.Rand
		}
		if opts.Now != nil {
			r.now = opts.Now
		}
	}
	if r.modes == nil {
		r.modes = NewModes(&ModesOptions{Config: cfg, Now: r.now})
	}
	r.cfg.Store(&cfg)
	return r
}

// Modes returns the degradation tracker (for status, pins and switches).
func (r *Router) Modes() *Modes { return r.modes }

// SetConfig replaces the configuration (also the Modes').
func (r *Router) SetConfig(cfg Config) {
	r.cfg.Store(&cfg)
	r.modes.SetConfig(cfg)
}

// Route is the gateway's capability router (hub.Options.Route).
func (r *Router) Route(vendor hub.Invoker) hub.Invoker {
	return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		return r.run(ctx, vendor, c)
	})
}

func (r *Router) run(ctx context.Context, vendor hub.Invoker, c *hub.Call) (*hub.Result, error) {
	cp := c.Capability
	cfg := r.cfg.Load().Capabilities[cp.Name]
	mode := r.modes.Mode(cp.Name)
	if mode == Off {
		return nil, switchedOff(cp.Name)
	}
	// A call that already runs as a job (an approved parked call, or a
	// queued one) is neither parked nor queued again.
	_, inJob := c.Meta["toolhub/job_id"]
	if cfg.HighRisk && mode == Degraded && len(cp.Chain) > 1 && !inJob {
		reason := fmt.Sprintf("capability %q is high-risk and degraded: its primary %s is unhealthy and it does not fall back to a weaker vendor", cp.Name, cp.Chain[0].Tool)
		switch ok, err := askUser(ctx, c, reason); {
		case errors.Is(err, ErrDeclined):
			return nil, err
		case err != nil:
			c.Trace.Decide("high-risk: asking the user failed (" + err.Error() + "); parking for review")
			return r.park(ctx, c, reason)
		case !ok:
			return r.park(ctx, c, reason)
		}
		// The user confirmed: run the chain as an approved review would.
	}
	order, moved := r.plan(c, cfg, mode)
	c.Trace.Decide(fmt.Sprintf("route %s: mode %s, policy %s, order %s", cp.Name, mode, policyOf(cfg), steps(cp, order)))
	var errs []error
	for pos, i := range order {
		start := r.now()
		res, err := hub.RunStep(ctx, vendor, c, i)
		if i == 0 {
			r.record(ctx, cp.Name, err, r.now().Sub(start))
		}
		if err == nil {
			res.Provenance.Fallback = pos > 0 || (moved && i != 0)
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, err)
		if pos+1 < len(order) {
			c.Trace.Decide(fmt.Sprintf("fallback: %s failed (%s), trying %s", cp.Chain[i].Tool, hub.CodeOf(err), cp.Chain[order[pos+1]].Tool))
		}
	}
	if allCode(errs, hub.CodePrivacy) {
		// No vendor may see this data: a later try (stale answers are
		// never cached at such levels, a job) would not help.
		return nil, &hub.Error{Code: hub.CodePrivacy, Message: fmt.Sprintf("capability %q: the call's data is too sensitive for every vendor of its chain", cp.Name), Err: errors.Join(errs...)}
	}
	if r.stale != nil {
		if res, ok := r.stale(ctx, c); ok {
			res.Provenance.Capability = cp.Name
			res.Provenance.Stale = true
			c.Trace.Decide(fmt.Sprintf("fallback: every vendor failed; last known good answer (age %.0fs)", res.Provenance.AgeSeconds))
			return res, nil
		}
	}
	queueFailed := false
	if bool(cfg.Queue) && r.enq != nil && !inJob {
		id, err := r.enq.Enqueue(ctx, c)
		if err == nil {
			c.Trace.Decide("fallback: every vendor failed; queued as job " + id)
			return queuedResult(cp.Name, id, QueuedText), nil
		}
		queueFailed = true
		errs = append(errs, fmt.Errorf("queue: %w", err))
	}
	return nil, finalError(cp, errs, r.stale != nil, bool(cfg.Queue) && r.enq != nil, queueFailed)
}

// record feeds the primary's outcome to the degradation tracker.
func (r *Router) record(ctx context.Context, name string, err error, d time.Duration) {
	if err != nil && (ctx.Err() != nil || hub.IsHubState(err)) {
		return // the caller's deadline or cancellation, or the hub's own state: not the vendor's fault
	}
	code := hub.CodeOf(err)
	switch {
	case err == nil:
		r.modes.Record(name, Outcome{Latency: d})
	case code == hub.CodeCircuitOpen && !rampSkip(err):
		r.modes.Record(name, Outcome{Failed: true, FastFail: true})
	case code == hub.CodeTimeout:
		r.modes.Record(name, Outcome{Failed: true, Timeout: true, Latency: d})
	case hub.VendorFault(code):
		r.modes.Record(name, Outcome{Failed: true, Latency: d})
	}
	// Other codes (rate limits, the caller's own errors) say nothing
	// about the primary's health.
}

// rampSkip: hub/govern refused the call to hold a recovering vendor to its
// ramp share (circuit_open with Details {"reason": "ramp"}); that says
// nothing bad about the vendor.
func rampSkip(err error) bool {
	d, ok := hub.AsError(err).Details.(map[string]any)
	return ok && d["reason"] == "ramp"
}

func (r *Router) park(ctx context.Context, c *hub.Call, reason string) (*hub.Result, error) {
	if r.parker == nil {
		return nil, &hub.Error{Code: hub.CodeUnavailable, Message: reason + "; no review queue is configured: retry later"}
	}
	id, err := r.parker.Park(ctx, c, reason)
	if err != nil {
		return nil, &hub.Error{Code: hub.CodeUnavailable, Message: reason + "; parking it for review failed: " + err.Error(), Err: err}
	}
	c.Trace.Decide("high-risk: parked for review as job " + id)
	return queuedResult(c.Capability.Name, id, "needs_review: "+reason+"; the result will be pushed after review"), nil
}

func queuedResult(capability, id, text string) *hub.Result {
	return &hub.Result{
		Content:    []mcp.Content{mcp.NewTextContent(text)},
		Provenance: hub.Provenance{Capability: capability, Queued: true, JobID: id},
	}
}

// plan returns the order of chain steps to try, and whether the mode moved
// the primary back or skipped it (then any other step answering is a
// fallback).
func (r *Router) plan(c *hub.Call, cfg CapabilityConfig, mode Mode) (order []int, moved bool) {
	chain := c.Capability.Chain
	order = make([]int, len(chain))
	for i := range order {
		order[i] = i
	}
	switch policyOf(cfg) {
	case Weighted:
		u, cum := r.rand()*100, 0.0
		for i, s := range chain {
			cum += cfg.Weights[s.Tool]
			if u < cum {
				order = append([]int{i}, slices.Delete(order, i, i+1)...)
				break
			}
		}
	case Cheapest:
		if r.cost != nil {
			costs := make([]float64, len(chain))
			for i, s := range chain {
				costs[i] = r.cost(c, s)
			}
			slices.SortStableFunc(order, func(a, b int) int {
				switch {
				case costs[a] < costs[b]:
					return -1
				case costs[a] > costs[b]:
					return 1
				}
				return 0
			})
		}
	}
	if len(order) < 2 {
		return order, false
	}
	th := r.modes.Thresholds(c.Capability.Name)
	toEnd := func() {
		p := slices.Index(order, 0)
		order = append(slices.Delete(order, p, p+1), 0)
	}
	switch mode {
	case Alert:
		if r.rand() < th.AlertShare {
			toEnd()
			return order, true
		}
	case Degraded:
		p := slices.Index(order, 0)
		return slices.Delete(order, p, p+1), true
	case Recovering:
		if r.rand() >= th.RecoverShare {
			toEnd()
			return order, true
		}
	}
	return order, false
}

func policyOf(cfg CapabilityConfig) Policy {
	if cfg.Policy == "" {
		return Ordered
	}
	return cfg.Policy
}

func steps(cp *registry.Capability, order []int) string {
	names := make([]string, len(order))
	for i, o := range order {
		names[i] = cp.Chain[o].Tool
	}
	return "[" + strings.Join(names, " ") + "]"
}

func allCode(errs []error, code hub.Code) bool {
	for _, err := range errs {
		if hub.CodeOf(err) != code {
			return false
		}
	}
	return len(errs) > 0
}

// finalError says that nothing worked, why each vendor failed, and what
// the caller can do.
func finalError(cp *registry.Capability, errs []error, staleTried, queueable, queueFailed bool) *hub.Error {
	var parts []string
	var details []map[string]string
	var retryAfter time.Duration
	for _, err := range errs {
		e := hub.AsError(err)
		parts = append(parts, e.Error())
		d := map[string]string{"code": string(e.Code), "message": e.Message}
		if e.Vendor != "" {
			d["vendor"] = e.Vendor
		}
		details = append(details, d)
		if e.RetryAfter > 0 && (retryAfter == 0 || e.RetryAfter < retryAfter) {
			retryAfter = e.RetryAfter
		}
	}
	msg := fmt.Sprintf("capability %q: every vendor failed (%s)", cp.Name, strings.Join(parts, "; "))
	if len(errs) == 0 {
		msg = fmt.Sprintf("capability %q: no vendor could be tried", cp.Name)
	}
	if staleTried {
		msg += "; no last known good answer in the cache"
	}
	switch {
	case queueFailed:
		msg += "; queueing it failed too"
	case !queueable:
		msg += "; it is not queueable"
	}
	msg += "; retry later"
	if retryAfter > 0 {
		msg += fmt.Sprintf(" (after %v)", retryAfter)
	}
	return &hub.Error{Code: hub.CodeUnavailable, Message: msg, RetryAfter: retryAfter, Details: details, Err: errors.Join(errs...)}
}
