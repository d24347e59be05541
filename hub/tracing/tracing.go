package tracing

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/toolhub/toolhub/hub"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of toolhub's spans.
const Name = "github.com/toolhub/toolhub"

// MetaTraceparent and MetaTracestate are the MCP _meta keys that carry W3C
// trace context on a request (the MCP convention for tracing).
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

// Span attribute keys.
const (
	AttrCallID     = attribute.Key("toolhub.call_id")
	AttrTenant     = attribute.Key("toolhub.tenant")
	AttrTool       = attribute.Key("toolhub.tool") // the name asked, or the vendor's tool
	AttrCapability = attribute.Key("toolhub.capability")
	AttrVendor     = attribute.Key("toolhub.vendor")
	AttrOutcome    = attribute.Key("toolhub.outcome")
	AttrRetry      = attribute.Key("toolhub.retry")   // 0 for the first try, 1 for the first retry, …
	AttrRetries    = attribute.Key("toolhub.retries") // retries at one vendor tool
	AttrBreaker    = attribute.Key("toolhub.breaker_state")
	AttrJobID      = attribute.Key("toolhub.job_id")
	AttrCache      = attribute.Key("toolhub.cache") // hit, stale, miss
)

// Tracer makes toolhub's spans. The zero value uses the global tracer
// provider.
type Tracer struct {
	// Provider; nil means otel.GetTracerProvider() at each span (so a
	// provider installed later is used).
	Provider trace.TracerProvider
	// BreakerState returns a vendor's breaker state (closed, open,
	// half_open) for the vendor spans; nil leaves the attribute out.
	BreakerState func(vendor string) string
}

func (t *Tracer) tracer() trace.Tracer {
	p := t.Provider
	if p == nil {
		p = otel.GetTracerProvider()
	}
	return p.Tracer(Name)
}

// Start starts a span of toolhub's scope with the global provider.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return otel.GetTracerProvider().Tracer(Name).Start(ctx, name, opts...)
}

// Call is the outermost middleware: one span per call ("toolhub.call"),
// whose parent is the trace context of the caller's _meta when it has one
// (MCP clients that trace, and the stdio front door) or else the context's
// (the front door's request span). Install it before the decision log, so
// the log line carries the trace id.
func (t *Tracer) Call() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			var opts []trace.SpanStartOption
			if mctx := ExtractMeta(ctx, c.Meta); mctx != ctx {
				// The caller's own trace from _meta wins over the HTTP
				// request's; the request span stays linked.
				if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
					opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
				}
				ctx = mctx
			}
			opts = append(opts, trace.WithSpanKind(trace.SpanKindInternal))
			ctx, span := t.tracer().Start(ctx, "toolhub.call", opts...)
			defer span.End()
			r, err := next.Invoke(ctx, c)
			if span.IsRecording() {
				attrs := []attribute.KeyValue{AttrCallID.String(c.ID), AttrTenant.String(c.Tenant), AttrTool.String(c.Name),
					AttrOutcome.String(outcome(r, err))}
				if c.Capability != nil {
					attrs = append(attrs, AttrCapability.String(c.Capability.Name))
				}
				if r != nil {
					attrs = append(attrs, AttrVendor.String(r.Provenance.Vendor))
					if r.Provenance.JobID != "" {
						attrs = append(attrs, AttrJobID.String(r.Provenance.JobID))
					}
				}
				span.SetAttributes(attrs...)
				setError(span, err)
			}
			return r, err
		})
	}
}

// Vendor wraps the governed step at one vendor tool (install it before the
// governor's vendor middleware): one span ("toolhub.vendor") that covers the
// breaker, the limits and every retry, with the vendor, tool, outcome,
// number of retries and the breaker's state after the step. A call the
// breaker refuses has this span and no attempt span.
func (t *Tracer) Vendor() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			ctx, span := t.tracer().Start(ctx, "toolhub.vendor")
			defer span.End()
			c.Attempt = 0
			r, err := next.Invoke(ctx, c)
			if span.IsRecording() {
				v := c.Vendor()
				attrs := []attribute.KeyValue{AttrVendor.String(v), AttrTool.String(c.Tool.Def.Name),
					AttrOutcome.String(outcome(r, err)), AttrRetries.Int(max(c.Attempt-1, 0))}
				if t.BreakerState != nil {
					attrs = append(attrs, AttrBreaker.String(t.BreakerState(v)))
				}
				span.SetAttributes(attrs...)
				setError(span, err)
			}
			return r, err
		})
	}
}

// Attempt is one try at the vendor (install it after the governor's vendor
// middleware, so each retry gets its own span "toolhub.attempt"), with the
// retry number and the breaker's state as the try began. The context it
// passes on carries the span: the vendor's HTTP request and _meta are its
// children.
func (t *Tracer) Attempt() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			ctx, span := t.tracer().Start(ctx, "toolhub.attempt", trace.WithSpanKind(trace.SpanKindClient))
			defer span.End()
			var breaker string
			if span.IsRecording() && t.BreakerState != nil {
				breaker = t.BreakerState(c.Vendor())
			}
			r, err := next.Invoke(ctx, c)
			if span.IsRecording() {
				attrs := []attribute.KeyValue{AttrVendor.String(c.Vendor()), AttrTool.String(c.Tool.Def.Name),
					AttrOutcome.String(outcome(r, err)), AttrRetry.Int(max(c.Attempt-1, 0))}
				if breaker != "" {
					attrs = append(attrs, AttrBreaker.String(breaker))
				}
				span.SetAttributes(attrs...)
				setError(span, err)
			}
			return r, err
		})
	}
}

// Job wraps a jobs worker's run of a queued call: one span ("toolhub.job")
// per run, a child of the trace context the call's _meta carries, if any.
func (t *Tracer) Job(run func(ctx context.Context, c *hub.Call) (*hub.Result, error)) func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
	return func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		ctx = ExtractMeta(ctx, c.Meta)
		ctx, span := t.tracer().Start(ctx, "toolhub.job", trace.WithSpanKind(trace.SpanKindConsumer))
		defer span.End()
		r, err := run(ctx, c)
		if span.IsRecording() {
			id, _ := c.Meta[hub.MetaJobID].(string)
			span.SetAttributes(AttrJobID.String(id), AttrTool.String(c.Name), AttrTenant.String(c.Tenant), AttrOutcome.String(outcome(r, err)))
			setError(span, err)
		}
		return r, err
	}
}

// outcome names how a step ended, as the decision log does ([hub.OutcomeOf]).
func outcome(r *hub.Result, err error) string { return string(hub.OutcomeOf(r, err)) }

func setError(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, string(hub.CodeOf(err)))
	}
}

// ExtractMeta returns ctx with the remote span context of an MCP _meta's
// traceparent (and tracestate), or ctx itself when m carries none or the
// propagator is off.
func ExtractMeta(ctx context.Context, m map[string]any) context.Context {
	tp, _ := m[MetaTraceparent].(string)
	if tp == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{MetaTraceparent: tp}
	if ts, ok := m[MetaTracestate].(string); ok {
		carrier[MetaTracestate] = ts
	}
	out := otel.GetTextMapPropagator().Extract(ctx, carrier)
	if !trace.SpanContextFromContext(out).IsRemote() {
		return ctx
	}
	return out
}

// InjectMeta sets the trace context of ctx (traceparent, tracestate) into
// an MCP _meta map, replacing what the caller sent there: the vendor's
// parent is toolhub's attempt span. It does nothing when ctx has no span
// being traced or the propagator is off.
func InjectMeta(ctx context.Context, m map[string]any) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	for k, v := range carrier {
		m[k] = v
	}
}

// Transport wraps base (nil: http.DefaultTransport) so that each request
// carries the trace context of its own context as W3C headers
// (traceparent, tracestate). With no span, or the propagator off, it sends
// the request as is.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return transport{base}
}

// Client returns a copy of c whose transport propagates trace context.
func Client(c *http.Client) *http.Client {
	cc := *c
	cc.Transport = Transport(c.Transport)
	return &cc
}

type transport struct{ base http.RoundTripper }

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(r.Context()).IsValid() {
		return t.base.RoundTrip(r)
	}
	carrier := propagation.HeaderCarrier{}
	otel.GetTextMapPropagator().Inject(r.Context(), carrier)
	if len(carrier) == 0 {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not modify its request
	for k, v := range carrier {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// Unwrap returns the wrapped transport.
func (t transport) Unwrap() http.RoundTripper { return t.base }

var enabled atomic.Bool

// Enable turns on the spans that packages start by themselves ([Lookup]);
// internal/x/telemetry calls it when it installs an SDK. Off, they cost a
// load of one flag.
func Enable(on bool) { enabled.Store(on) }

// Enabled reports whether tracing is on.
func Enabled() bool { return enabled.Load() }

func nothing(string) {}

// Lookup starts a span for a lookup (name, e.g. "toolhub.cache.get") and
// returns the function that ends it with its result ("hit", "stale",
// "miss"). Tracing off, it starts nothing.
func Lookup(ctx context.Context, name, tool string) (end func(result string)) {
	if !Enabled() {
		return nothing
	}
	_, span := Start(ctx, name, trace.WithAttributes(AttrTool.String(tool)))
	return func(result string) {
		span.SetAttributes(AttrCache.String(result))
		span.End()
	}
}
