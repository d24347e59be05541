package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// install sets a recording provider and the W3C propagator for one test.
func install(t *testing.T) *tracetest.InMemoryExporter {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prevP, prevT := otel.GetTextMapPropagator(), otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	tracing.Enable(true)
	t.Cleanup(func() {
		tracing.Enable(false)
		otel.SetTracerProvider(prevT)
		otel.SetTextMapPropagator(prevP)
	})
	return exp
}

func TestJobSpanFollowsTheTraceOfItsMeta(t *testing.T) {
	exp := install(t)
	tr := &tracing.Tracer{}
	run := tr.Job(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		return nil, &hub.Error{Code: hub.CodeUnavailable}
	})
	c := &hub.Call{Name: "image.generate", Tenant: "acme", Meta: map[string]any{
		hub.MetaJobID: "job-1", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	if _, err := run(context.Background(), c); err == nil {
		t.Fatal("the run's error was lost")
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "toolhub.job" {
		t.Fatalf("spans %v, want one toolhub.job", spans)
	}
	s := spans[0]
	if s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("job span in trace %s under %s, want the _meta's", s.SpanContext.TraceID(), s.Parent.SpanID())
	}
	got := map[string]string{}
	for _, a := range s.Attributes {
		got[string(a.Key)] = a.Value.String()
	}
	if got["toolhub.job_id"] != "job-1" || got["toolhub.outcome"] != "unavailable" {
		t.Errorf("job span attributes %v", got)
	}
}

func TestInjectMetaAndTransportCarryTheSpan(t *testing.T) {
	install(t)
	ctx, span := tracing.Start(context.Background(), "toolhub.attempt")
	defer span.End()
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"

	m := map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	tracing.InjectMeta(ctx, m)
	if m["traceparent"] != want {
		t.Errorf("_meta traceparent %v, want toolhub's %s", m["traceparent"], want)
	}

	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
	}))
	defer srv.Close()
	c := tracing.Client(srv.Client())
	for _, rctx := range []context.Context{ctx, context.Background()} {
		req, _ := http.NewRequestWithContext(rctx, "GET", srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(got) != 2 || got[0] != want || got[1] != "" {
		t.Errorf("traceparent headers %q, want [%q, none]", got, want)
	}
}

func TestLookupOffStartsNothing(t *testing.T) {
	exp := install(t)
	tracing.Enable(false)
	tracing.Lookup(context.Background(), "toolhub.cache.get", "t")("hit")
	tracing.Enable(true)
	tracing.Lookup(context.Background(), "toolhub.cache.get", "t")("miss")
	if spans := exp.GetSpans(); len(spans) != 1 {
		t.Errorf("%d spans, want 1 (only while enabled)", len(spans))
	}
}
