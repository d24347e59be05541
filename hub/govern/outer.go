package govern

import (
	"context"
	"log/slog"
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
	l := callLine{c: c, r: r}
	start := c.Start
	if start.IsZero() {
		start = g.now()
	}
	l.total = g.now().Sub(start)
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

	if r != nil {
		l.p = r.Provenance
	}
	l.vendor = l.p.Vendor
	if l.vendor == "" && len(l.attempts) > 0 {
		l.vendor = l.attempts[len(l.attempts)-1].Vendor
	}
	if l.vendor == "" {
		l.vendor = c.Vendor()
	}
	tool := c.Name
	l.outcome = hub.OutcomeOf(r, err)
	if err != nil {
		l.he = hub.AsError(err)
		if l.he.Code == hub.CodeUnknownTool {
			tool = "" // names asked for nothing are unbounded: keep them out of labels
		}
	}
	g.m.call(tool, l.vendor, l.outcome).Inc()
	g.m.latency(l.vendor).Observe(l.total.Seconds())

	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
	}
	if !g.log.Enabled(ctx, level) {
		return
	}
	l.debug = g.debugOn(c.Tenant)
	if !l.debug && (err != nil || hasErrors(l.attempts)) {
		l.scrub = scrubber(c.Arguments)
	}
	// A record without the caller's PC: LogAttrs would unwind the stack
	// (runtime.Callers) on every call for a source line no decision log
	// handler shows.
	rec := slog.NewRecord(time.Now(), level, "call", 0)
	var buf [22]slog.Attr // the most a line has, on the stack: AddAttrs copies them
	rec.AddAttrs(l.attrs(ctx, buf[:0])...)
	_ = g.log.Handler().Handle(ctx, rec)
}

// callLine is what the decision log's line of one call is made of.
type callLine struct {
	c          *hub.Call
	r          *hub.Result
	he         *hub.Error // the call's error, if it failed
	p          hub.Provenance
	vendor     string // the vendor that answered, or the last one tried
	outcome    hub.Outcome
	attempts   []hub.Attempt
	decisions  []string
	total      time.Duration
	decisionUS int64
	debug      bool              // log the arguments
	scrub      *strings.Replacer // argument values out of error texts; nil: none
}

// attrs appends the line's fields to attrs, in the order
// [Governor.OuterMiddleware] documents.
func (l *callLine) attrs(ctx context.Context, attrs []slog.Attr) []slog.Attr {
	c := l.c
	attrs = append(attrs,
		slog.String("call_id", c.ID),
		slog.String("tenant", c.Tenant),
		slog.String("tool", c.Name),
	)
	if c.Capability != nil {
		attrs = append(attrs, slog.String("capability", c.Capability.Name))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		// The call's trace (OpenTelemetry): find its spans from this line.
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	if c.PlanID != "" {
		// Every call of a plan carries its id: grep the log for it to
		// replay the plan, step by step, with each step's decisions.
		attrs = append(attrs, slog.String("plan_id", c.PlanID))
	}
	attrs = append(attrs,
		slog.String("vendor", l.vendor),
		slog.String("priority", c.Priority.String()),
		slog.String("outcome", string(l.outcome)),
	)
	attempts, decisions := l.attempts, l.decisions
	if l.scrub != nil {
		attempts = scrubAttempts(attempts, l.scrub)
		decisions = scrubStrings(decisions, l.scrub)
	}
	attrs = append(attrs, slog.Any("attempts", attempts), slog.Any("decisions", decisions))
	if he := l.he; he != nil {
		msg := he.Message
		if he.Code == hub.CodeInvalidArguments {
			msg = "arguments do not match the input schema" // the validator may quote values
		} else if l.scrub != nil {
			msg = l.scrub.Replace(msg)
		}
		attrs = append(attrs, slog.String("code", string(he.Code)), slog.String("error", msg))
	}
	attrs = append(attrs,
		slog.Bool("fallback", l.p.Fallback),
		slog.Bool("cached", l.p.Cached),
		slog.Bool("stale", l.p.Stale),
		slog.Bool("queued", l.p.Queued),
		slog.Float64("latency_ms", float64(l.total.Microseconds())/1000),
		slog.Int64("decision_us", l.decisionUS),
	)
	if l.r != nil && len(l.r.Findings) > 0 {
		// The vendor's result scan flagged the result (it was not changed).
		attrs = append(attrs, slog.Any("findings", l.r.Findings))
	}
	if l.debug {
		attrs = append(attrs, slog.Any("arguments", c.Arguments))
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
