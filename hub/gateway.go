package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/toolhub/toolhub/registry"
)

// DefaultTimeout bounds one upstream attempt when the vendor sets none.
const DefaultTimeout = 5 * time.Second

// Options configure a [Gateway]. A nil *Options, and every zero field,
// means the default.
type Options struct {
	// Outer middlewares wrap the whole call, before the name is resolved
	// (decision log, metrics): they see every call, including unknown ones.
	Outer []Middleware
	// Call middlewares wrap a resolved, validated call (budget, cache).
	// c.Tool or c.Capability is set when they run.
	Call []Middleware
	// Vendor middlewares wrap each attempt at one vendor tool (breaker,
	// rate limit, bulkhead, retry). c.Tool is set when they run. The
	// innermost step applies the vendor's timeout, calls the upstream and
	// checks the output schema.
	Vendor []Middleware
	// Route runs a capability's chain of vendor tools; nil tries them in
	// order until one answers ([OrderedRoute]).
	Route func(vendor Invoker) Invoker
	// DefaultTimeout bounds an attempt whose vendor sets no timeout; zero
	// means [DefaultTimeout].
	DefaultTimeout time.Duration
	// Timeout returns the attempt timeout of a vendor tool (by its vendor,
	// or its timeout class); nil or zero means DefaultTimeout. The caller's
	// own deadline always wins.
	Timeout func(t *registry.Tool) time.Duration
	// Deadline returns a call's overall deadline when the caller's context
	// has none (its retries and fallbacks all fit inside it); nil or zero
	// means none. The caller's own deadline always wins.
	Deadline func(e registry.Entry) time.Duration
	// Visible says whether a tenant may see and call an entry; nil means
	// every tenant sees everything. A call to an invisible entry fails as
	// unknown_tool, so a tenant cannot probe for others' tools.
	Visible func(tenant string, e registry.Entry) bool
	// MaxDataLevel is the highest privacy level a vendor may receive; nil
	// means 0 (public data only) for every vendor. A call carrying more
	// sensitive data never reaches that vendor: it fails with
	// privacy_refused, and a capability moves on to the next vendor.
	MaxDataLevel func(vendor string) int
	// Redact rewrites the arguments going to a vendor (e.g. masks phone
	// numbers); nil sends them as they are. It must not modify its input.
	Redact func(vendor string, args map[string]any) map[string]any
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Gateway is the one pipeline every call goes through: resolve the name,
// validate the arguments, route to vendor tools through the middlewares,
// validate the output, and say where the answer came from.
type Gateway struct {
	cat      *registry.Catalog
	ups      Upstreams
	opts     Options
	outer    Invoker // Outer → resolve → Call → route
	vendor   Invoker // Vendor middlewares → attempt
	resolved Invoker // Call middlewares → route
	// realClock is set when Options.Now is the wall clock: its readings
	// also serve a call's id and an attempt's deadline, and latencies
	// read the monotonic clock alone (each clock read costs, on some
	// virtual machines, as much as a map lookup).
	realClock bool
}

// NewGateway assembles the pipeline once; calls never rebuild it.
func NewGateway(cat *registry.Catalog, ups Upstreams, opts *Options) *Gateway {
	g := &Gateway{cat: cat, ups: ups}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.DefaultTimeout <= 0 {
		g.opts.DefaultTimeout = DefaultTimeout
	}
	if g.opts.Logger == nil {
		g.opts.Logger = slog.Default()
	}
	if g.opts.Now == nil {
		g.opts.Now, g.realClock = time.Now, true
	}
	route := g.opts.Route
	if route == nil {
		route = OrderedRoute
	}
	// The privacy gate runs first, so refused data spends no limit and
	// trips no breaker.
	g.vendor = Chain(InvokerFunc(g.attempt), append([]Middleware{g.privacy}, g.opts.Vendor...)...)
	capRoute := route(g.vendor)
	g.resolved = Chain(InvokerFunc(func(ctx context.Context, c *Call) (*Result, error) {
		if c.Capability != nil {
			return capRoute.Invoke(ctx, c)
		}
		return g.vendor.Invoke(ctx, c)
	}), g.opts.Call...)
	g.outer = Chain(InvokerFunc(g.resolve), g.opts.Outer...)
	return g
}

// Catalog returns the gateway's catalog.
func (g *Gateway) Catalog() *registry.Catalog { return g.cat }

// Call runs one call through the whole pipeline. The returned error is
// always an *Error (see [AsError]). The result, when there is one, carries
// its provenance.
func (g *Gateway) Call(ctx context.Context, c *Call) (*Result, error) {
	if c.ID == "" || c.Start.IsZero() {
		now := g.opts.Now()
		if c.ID == "" && g.realClock {
			c.ID = newCallID(now)
		} else if c.ID == "" {
			c.ID = NewCallID()
		}
		if c.Start.IsZero() {
			c.Start = now
		}
	}
	if c.Trace == nil {
		c.Trace = newTrace()
	}
	r, err := g.outer.Invoke(ctx, c)
	return g.answer(c, r, err)
}

// answer is what a governed call c answers: its error as an *Error, or
// its result r with the call's provenance (call id, attempts, latency).
func (g *Gateway) answer(c *Call, r *Result, err error) (*Result, error) {
	if err != nil {
		return nil, AsError(err)
	}
	r.Provenance.CallID = c.ID
	r.Provenance.Attempts = len(c.Trace.Attempts)
	r.Provenance.LatencyMS = float64(g.since(c.Start).Microseconds()) / 1000
	return r, nil
}

// since is the time elapsed since t on the gateway's clock: on the wall
// clock, time.Since, which reads only the monotonic clock when t has a
// reading of it (time.Now reads it and the wall clock: two reads).
func (g *Gateway) since(t time.Time) time.Duration {
	if g.realClock {
		return time.Since(t)
	}
	return g.opts.Now().Sub(t)
}

// Visible reports whether tenant may see and call e.
func (g *Gateway) Visible(tenant string, e registry.Entry) bool {
	return g.opts.Visible == nil || g.opts.Visible(tenant, e)
}

// Lookup resolves a name as tenant sees the catalog.
func (g *Gateway) Lookup(tenant, name string) (registry.Entry, bool) {
	e, ok := g.cat.Lookup(name)
	if !ok || !g.Visible(tenant, e) {
		return registry.Entry{}, false
	}
	return e, true
}

// Precheck resolves name for tenant and validates args, without calling
// anything: front doors use it to answer protocol-level errors (JSON-RPC
// -32602) before a call starts.
func (g *Gateway) Precheck(tenant, name string, args map[string]any) error {
	e, ok := g.Lookup(tenant, name)
	if !ok {
		return unknownTool(name)
	}
	return validateArgs(e, args)
}

// PrecheckCall is [Gateway.Precheck] of c's tenant, name and arguments
// (nil arguments become {}), for a front door that calls c next: the
// entry it validated the arguments against is remembered in c, and the
// call does not validate them a second time as long as the name still
// resolves to that same entry (a catalog change in between means
// validating again). A caller that changes c.Arguments after must call it
// again.
func (g *Gateway) PrecheckCall(c *Call) error {
	e, ok := g.Lookup(c.Tenant, c.Name)
	if !ok {
		return unknownTool(c.Name)
	}
	if c.Arguments == nil {
		c.Arguments = map[string]any{}
	}
	if err := validateArgs(e, c.Arguments); err != nil {
		return err
	}
	c.checked = e
	return nil
}

func unknownTool(name string) *Error {
	return &Error{Code: CodeUnknownTool, Message: fmt.Sprintf("unknown tool %q; list the catalog with tools/list or GET /v1/tools", name)}
}

func validateArgs(e registry.Entry, args map[string]any) error {
	var err error
	if args == nil {
		args = map[string]any{}
	}
	if e.Capability != nil {
		err = e.Capability.ValidateInput(args)
	} else {
		err = e.Tool.ValidateInput(args)
	}
	if err == nil {
		return nil
	}
	ie := &Error{Code: CodeInvalidArguments, Message: fmt.Sprintf("arguments of %q do not match its input schema: %v", e.Name, err), Err: err}
	if se, ok := err.(*registry.SchemaError); ok {
		ie.Details = se.Issues
	}
	return ie
}

// resolve finds the named entry and validates the arguments.
func (g *Gateway) resolve(ctx context.Context, c *Call) (*Result, error) {
	e, ok := g.Lookup(c.Tenant, c.Name)
	if !ok {
		return nil, unknownTool(c.Name)
	}
	if c.Arguments == nil {
		c.Arguments = map[string]any{}
	}
	if !c.prechecked(e) {
		if err := validateArgs(e, c.Arguments); err != nil {
			return nil, err
		}
	}
	c.checked = registry.Entry{}
	c.cat = g.cat
	c.Capability, c.Tool = e.Capability, e.Tool
	if _, ok := ctx.Deadline(); !ok && g.opts.Deadline != nil {
		if d := g.opts.Deadline(e); d > 0 {
			// As context.WithTimeout(ctx, d), arming no timer until
			// someone waits on Done (see attemptContext).
			cctx := newAttemptContext(ctx, time.Now().Add(d))
			defer cctx.end()
			ctx = cctx
		}
	}
	return g.resolved.Invoke(ctx, c)
}

// privacy refuses to send a call's data to a vendor not allowed to see it.
func (g *Gateway) privacy(next Invoker) Invoker {
	return InvokerFunc(func(ctx context.Context, c *Call) (*Result, error) {
		max := 0
		if g.opts.MaxDataLevel != nil {
			max = g.opts.MaxDataLevel(c.Tool.Vendor)
		}
		if c.DataLevel > max {
			c.Trace.Decide(fmt.Sprintf("privacy %s refused L%d > L%d", c.Tool.Vendor, c.DataLevel, max))
			return nil, &Error{Code: CodePrivacy, Vendor: c.Tool.Vendor,
				Message: fmt.Sprintf("the call carries L%d data; vendor %q may receive at most L%d", c.DataLevel, c.Tool.Vendor, max)}
		}
		if g.opts.Redact != nil {
			rc := *c
			rc.Arguments = g.opts.Redact(c.Tool.Vendor, c.Arguments)
			if c.Method != "" && c.Params != nil {
				// A relayed request: prompts/get arguments, a resources/read
				// URI, a completion's value.
				p, err := redactParams(c.Params, func(m map[string]any) map[string]any { return g.opts.Redact(c.Tool.Vendor, m) })
				if err != nil {
					return nil, &Error{Code: CodeInternal, Vendor: c.Tool.Vendor, Message: fmt.Sprintf("%s: the request could not be checked for redaction: %v", c.Method, err)}
				}
				rc.Params = p
			}
			if in := c.Input; in != nil && len(in.Responses) > 0 {
				// A multi round trip's answers (what the user typed, what
				// the client's model wrote) go to the vendor too.
				var m map[string]any
				if err := json.Unmarshal(in.Responses, &m); err != nil {
					return nil, &Error{Code: CodeInvalidArguments, Vendor: c.Tool.Vendor, Message: fmt.Sprintf("inputResponses must be a JSON object: %v", err)}
				}
				b, err := json.Marshal(g.opts.Redact(c.Tool.Vendor, m))
				if err != nil {
					return nil, &Error{Code: CodeInternal, Vendor: c.Tool.Vendor, Message: fmt.Sprintf("inputResponses could not be checked for redaction: %v", err)}
				}
				rc.Input = &InputResponses{Responses: b, State: in.State}
			}
			return next.Invoke(ctx, &rc)
		}
		return next.Invoke(ctx, c)
	})
}

// attempt is the innermost step: one call to one vendor tool, bounded by the
// vendor's timeout (or the caller's deadline, whichever is first), with the
// result checked against the tool's output schema.
func (g *Gateway) attempt(ctx context.Context, c *Call) (*Result, error) {
	t := c.Tool
	up, ok := g.ups.Upstream(t.Vendor)
	if !ok {
		err := &Error{Code: CodeUnavailable, Vendor: t.Vendor, Message: fmt.Sprintf("vendor %q is not connected", t.Vendor)}
		g.record(c, time.Duration(0), nil, err)
		return nil, err
	}
	timeout := g.opts.DefaultTimeout
	if g.opts.Timeout != nil {
		if d := g.opts.Timeout(t); d > 0 {
			timeout = d
		}
	}
	start := g.opts.Now()
	wall := start
	if !g.realClock {
		wall = time.Now() // deadlines are the wall clock's, whatever Options.Now says
	}
	var r *Result
	var err error
	if dl, ok := ctx.Deadline(); ok && !dl.After(wall.Add(timeout)) {
		// The call's deadline comes first: it bounds the attempt as it is,
		// with no context of the attempt's own.
		r, err = up.Invoke(ctx, c)
	} else {
		actx := newAttemptContext(ctx, wall.Add(timeout))
		r, err = up.Invoke(actx, c)
		actx.end()
	}
	if err == nil {
		err = checkOutput(t, r)
	} else {
		err = upstreamError(ctx, t.Vendor, timeout, err)
	}
	g.record(c, g.since(start), r, err)
	if err != nil {
		return nil, err
	}
	r.Provenance.Vendor = t.Vendor
	r.Provenance.Tool = t.Def.Name
	return r, nil
}

// record notes an attempt in the call's trace, its outcome by [OutcomeOf]:
// a result the tool itself marked isError is tool_error, not ok.
func (g *Gateway) record(c *Call, d time.Duration, r *Result, err error) {
	a := Attempt{Vendor: c.Tool.Vendor, Tool: c.Tool.Def.Name, Outcome: OutcomeOf(r, err), LatencyMS: float64(d.Microseconds()) / 1000}
	if err != nil {
		a.Error = AsError(err).Message
	}
	c.Trace.Attempts = append(c.Trace.Attempts, a)
}

// upstreamError classifies an upstream failure: the caller's own deadline or
// cancellation stays theirs; the attempt's timeout is the vendor's.
func upstreamError(ctx context.Context, vendor string, timeout time.Duration, err error) error {
	if e := (*Error)(nil); errors.As(err, &e) {
		if e.Vendor == "" {
			e.Vendor = vendor
		}
		return e
	}
	if ctx.Err() != nil {
		ae := AsError(ctx.Err())
		ae.Vendor = vendor
		return ae
	}
	ae := AsError(err)
	if ae.Code == CodeTimeout {
		ae.Message = fmt.Sprintf("vendor %q did not answer within %v", vendor, timeout)
	}
	if ae.Code == CodeInternal {
		ae.Code = CodeUnavailable
	}
	ae.Vendor = vendor
	return ae
}

// checkOutput enforces the tool's output schema: a vendor that declares one
// must return matching structuredContent (unless it reports a tool error).
func checkOutput(t *registry.Tool, r *Result) error {
	if r == nil {
		return &Error{Code: CodeUpstream, Vendor: t.Vendor, Message: fmt.Sprintf("vendor %q: tool %q returned no result", t.Vendor, t.Def.Name)}
	}
	if r.IsError || r.Input != nil || t.OutputSchema() == nil {
		return nil
	}
	if r.Structured == nil {
		return &Error{Code: CodeInvalidOutput, Vendor: t.Vendor, Message: fmt.Sprintf("vendor %q: tool %q declares an output schema but returned no structuredContent", t.Vendor, t.Def.Name)}
	}
	if err := t.ValidateOutput(r.Structured); err != nil {
		e := &Error{Code: CodeInvalidOutput, Vendor: t.Vendor, Message: fmt.Sprintf("vendor %q: tool %q: result does not match its output schema: %v", t.Vendor, t.Def.Name, err), Err: err}
		if se, ok := err.(*registry.SchemaError); ok {
			e.Details = se.Issues
		}
		return e
	}
	return nil
}

// redactParams applies redact to every string of a relayed request's
// params, by a round trip through JSON into a new value of params' own
// type. params comes back as it was when redact changes nothing.
func redactParams(params any, redact func(map[string]any) map[string]any) (any, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	before, _ := json.Marshal(m) // m's keys sorted, as out's are
	out, err := json.Marshal(redact(m))
	if err != nil {
		return nil, err
	}
	if bytes.Equal(before, out) {
		return params, nil
	}
	p := reflect.New(reflect.TypeOf(params))
	if err := json.Unmarshal(out, p.Interface()); err != nil {
		return nil, err
	}
	return p.Elem().Interface(), nil
}
