package govern

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/toolhub/toolhub/hub"
	"go.opentelemetry.io/otel/trace"
)

// OuterMiddleware writes the decision log and the call metrics (install it
// first in [hub.Options].Outer, so it sees every call, unknown ones too).
//
// After each call it logs ONE JSON line (message "call") with: call_id,
// tenant, tool (the name asked), capability, vendor (the one that answered,
// or the last one tried), trace_id and span_id (when the call is traced,
// see hub/tracing), attempts (vendor, tool, outcome, latency_ms,
// error), decisions, code and error (on failure), fallback / cached /
// stale / queued, latency_ms (total), decision_us: the time spent in
// toolhub outside upstream attempts (total minus the attempts' latencies),
// and findings (field, rule, span) when the vendor's result scan flagged
// the result.
//
// The line says what the call was when it ended. With [Options.LogQueue]
// it is encoded and written by the governor's writer goroutine, shortly
// after the call returned; without, before the call returns.
//
// Argument values are never logged, and string argument values are
// scrubbed from logged error texts ("[redacted]"), unless [Governor.SetDebug]
// is on for the tenant: then an "arguments" field carries them.
func (g *Governor) OuterMiddleware() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			r, err := next.Invoke(ctx, c)
			g.record(ctx, c, r, err)
			return r, err
		})
	}
}

func (g *Governor) record(ctx context.Context, c *hub.Call, r *hub.Result, err error) {
	var l callLine
	var end time.Time
	switch {
	case c.Start.IsZero():
		end = g.now()
	case g.o.Now == nil:
		// The wall clock: time.Since reads the monotonic clock alone
		// (time.Now reads it and the wall clock), and the call's end is
		// its start plus that.
		l.total = time.Since(c.Start)
		end = c.Start.Add(l.total)
	default:
		end = g.now()
		l.total = end.Sub(c.Start)
	}
	if c.Trace != nil {
		l.attempts, l.decisions = c.Trace.Attempts, c.Trace.Decisions
	}
	var upstream time.Duration
	for i := range l.attempts {
		a := &l.attempts[i]
		upstream += time.Duration(a.LatencyMS * float64(time.Millisecond))
		g.m.attempt(a.Vendor, a.Outcome).Inc()
	}
	l.decisionUS = max(0, (l.total - upstream).Microseconds())

	var p hub.Provenance
	if r != nil {
		p = r.Provenance
		l.findings = r.Findings
	}
	l.vendor = p.Vendor
	if l.vendor == "" && len(l.attempts) > 0 {
		l.vendor = l.attempts[len(l.attempts)-1].Vendor
	}
	if l.vendor == "" {
		l.vendor = c.Vendor()
	}
	tool := c.Name
	l.outcome = hub.OutcomeOf(r, err)
	var he *hub.Error
	if err != nil {
		he = hub.AsError(err)
		if he.Code == hub.CodeUnknownTool {
			tool = "" // names asked for nothing are unbounded: keep them out of labels
		}
	}
	g.m.call(tool, l.vendor, l.outcome).Inc()
	g.m.latency(l.vendor).Observe(l.total.Seconds())

	l.level = slog.LevelInfo
	if err != nil {
		l.level = slog.LevelWarn
	}
	if !g.log.Enabled(ctx, l.level) {
		return
	}
	// The line's time: the call's end, when the governor's clock is the
	// wall clock (a clock read costs, on some virtual machines, as much
	// as a map lookup).
	l.time = end
	if g.o.Now != nil {
		l.time = time.Now()
	}
	l.ctx = ctx
	l.callID, l.tenant, l.tool, l.planID, l.priority = c.ID, c.Tenant, c.Name, c.PlanID, c.Priority
	if c.Capability != nil {
		l.capability = c.Capability.Name
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		l.traced, l.traceID, l.spanID = true, sc.TraceID(), sc.SpanID()
	}
	l.fallback, l.cached, l.stale, l.queued = p.Fallback, p.Cached, p.Stale, p.Queued
	if g.debugOn(c.Tenant) {
		l.debug, l.arguments = true, c.Arguments
		if g.q != nil {
			// The line outlives the call: the caller's map may change.
			l.arguments = maps.Clone(c.Arguments)
		}
	} else if err != nil || hasErrors(l.attempts) {
		// Argument values out of the logged error texts, here: the
		// arguments are the caller's, who may reuse them once the call
		// has returned.
		if scrub := scrubber(c.Arguments); scrub != nil {
			l.attempts = scrubAttempts(l.attempts, scrub)
			l.decisions = scrubStrings(l.decisions, scrub)
			if he != nil && he.Code != hub.CodeInvalidArguments {
				l.errMsg = scrub.Replace(he.Message)
			}
		}
	}
	if he != nil {
		l.failed, l.code = true, he.Code
		if he.Code == hub.CodeInvalidArguments {
			l.errMsg = "arguments do not match the input schema" // the validator may quote values
		} else if l.errMsg == "" {
			l.errMsg = he.Message
		}
	}
	if g.q != nil {
		switch g.q.push(&l) {
		case lineQueued:
			return
		case queueFull:
			g.m.logInline.Inc()
		}
	}
	g.logLine(&l)
}

// logLine hands l to the decision log's handler: [NewJSONHandler]'s
// writes it straight from l, others get its record.
func (g *Governor) logLine(l *callLine) {
	h := g.log.Handler()
	if jh, ok := h.(*jsonHandler); ok {
		bp := linePool.Get().(*[]byte)
		b, ok := appendLine((*bp)[:0], l)
		if ok {
			_, _ = jh.lw.Write(b)
		}
		if cap(b) <= 64<<10 {
			*bp = b
			linePool.Put(bp)
		}
		if ok {
			return
		}
	}
	_ = h.Handle(l.ctx, l.record())
}

// callLine is the decision log's line of one call: a copy of what it
// says, made when the call ends, so that it can be written later, off
// the call path (its strings and slices are not changed once the call
// is over).
type callLine struct {
	ctx   context.Context // the call's, for the handler
	time  time.Time
	level slog.Level

	callID, tenant, tool, capability, planID string
	priority                                 hub.Priority
	traced                                   bool
	traceID                                  trace.TraceID
	spanID                                   trace.SpanID

	vendor    string // the vendor that answered, or the last one tried
	outcome   hub.Outcome
	attempts  []hub.Attempt // argument values scrubbed from errors
	decisions []string      // likewise
	failed    bool
	code      hub.Code
	errMsg    string // likewise

	fallback, cached, stale, queued bool
	total                           time.Duration
	decisionUS                      int64
	findings                        []hub.Finding
	debug                           bool           // log the arguments
	arguments                       map[string]any // when debug
}

// record returns the line as an slog record.
func (l *callLine) record() slog.Record {
	// A record without the caller's PC: LogAttrs would unwind the stack
	// (runtime.Callers) on every call for a source line no decision log
	// handler shows.
	rec := slog.NewRecord(l.time, l.level, "call", 0)
	var buf [22]slog.Attr // the most a line has, on the stack: AddAttrs copies them
	rec.AddAttrs(l.attrs(buf[:0])...)
	return rec
}

// attrs appends the line's fields to attrs, in the order
// [Governor.OuterMiddleware] documents.
func (l *callLine) attrs(attrs []slog.Attr) []slog.Attr {
	attrs = append(attrs,
		slog.String("call_id", l.callID),
		slog.String("tenant", l.tenant),
		slog.String("tool", l.tool),
	)
	if l.capability != "" {
		attrs = append(attrs, slog.String("capability", l.capability))
	}
	if l.traced {
		// The call's trace (OpenTelemetry): find its spans from this line.
		attrs = append(attrs, slog.String("trace_id", l.traceID.String()), slog.String("span_id", l.spanID.String()))
	}
	if l.planID != "" {
		// Every call of a plan carries its id: grep the log for it to
		// replay the plan, step by step, with each step's decisions.
		attrs = append(attrs, slog.String("plan_id", l.planID))
	}
	attrs = append(attrs,
		slog.String("vendor", l.vendor),
		slog.String("priority", l.priority.String()),
		slog.String("outcome", string(l.outcome)),
		slog.Any("attempts", l.attempts), slog.Any("decisions", l.decisions),
	)
	if l.failed {
		attrs = append(attrs, slog.String("code", string(l.code)), slog.String("error", l.errMsg))
	}
	attrs = append(attrs,
		slog.Bool("fallback", l.fallback),
		slog.Bool("cached", l.cached),
		slog.Bool("stale", l.stale),
		slog.Bool("queued", l.queued),
		slog.Float64("latency_ms", float64(l.total.Microseconds())/1000),
		slog.Int64("decision_us", l.decisionUS),
	)
	if len(l.findings) > 0 {
		// The vendor's result scan flagged the result (it was not changed).
		attrs = append(attrs, slog.Any("findings", l.findings))
	}
	if l.debug {
		attrs = append(attrs, slog.Any("arguments", l.arguments))
	}
	return attrs
}

func hasErrors(as []hub.Attempt) bool {
	for _, a := range as {
		if a.Error != "" {
			return true
		}
	}
	return false
}

// scrubber replaces the string values of args (4 characters or more) with
// "[redacted]", or returns nil when there are none.
func scrubber(args map[string]any) *strings.Replacer {
	var pairs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if len(v) >= 4 {
				pairs = append(pairs, v, "[redacted]")
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(args)
	if len(pairs) == 0 {
		return nil
	}
	return strings.NewReplacer(pairs...)
}

func scrubAttempts(as []hub.Attempt, r *strings.Replacer) []hub.Attempt {
	out := make([]hub.Attempt, len(as))
	for i, a := range as {
		a.Error = r.Replace(a.Error)
		out[i] = a
	}
	return out
}

func scrubStrings(ss []string, r *strings.Replacer) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.Replace(s)
	}
	return out
}
