package tracing_test

import (
	"context"
	"testing"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/tracing"
	"github.com/toolhub/toolhub/registry"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkCallSpans measures the call, vendor and attempt spans around a
// call that does nothing: "off" is the pipeline without the middlewares
// (what the app installs when tracing is not configured), "on" records
// every span into memory (no export).
func BenchmarkCallSpans(b *testing.B) {
	tool := &registry.Tool{Vendor: "v", Def: registry.ToolDef{Name: "t"}}
	done := hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return &hub.Result{}, nil })
	run := func(b *testing.B, inv hub.Invoker) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			c := &hub.Call{Name: "v__t", Tool: tool, Trace: &hub.Trace{}}
			if _, err := inv.Invoke(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("off", func(b *testing.B) { run(b, done) })
	b.Run("on", func(b *testing.B) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discard{exp}))
		prev := otel.GetTracerProvider()
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(propagation.TraceContext{})
		b.Cleanup(func() { otel.SetTracerProvider(prev) })
		tr := &tracing.Tracer{BreakerState: func(string) string { return "closed" }}
		run(b, hub.Chain(done, tr.Call(), tr.Vendor(), tr.Attempt()))
	})
}

// discard ends spans without keeping them (the benchmark would grow the
// exporter's memory otherwise).
type discard struct{ sdktrace.SpanExporter }

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }
