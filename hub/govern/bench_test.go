package govern_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/registry"
)

// BenchmarkGatewayGoverned measures one call through a gateway with all
// governance on — local rate limits (vendor and tenant), breaker, retry
// policy, bulkhead, decision log (JSON to io.Discard, through the handler
// toolhub serve logs with, govern.NewJSONHandler, queued as toolhub serve
// queues it: govern.DefaultLogQueue) and metrics — to an in-process
// upstream that answers at once.
//
// The decision log's lines are encoded by the governor's writer goroutine,
// which runs beside the calls when there is a second P: ns/op is then the
// caller's time, and -cpu 1 (one P for both) what a call costs in all.
func BenchmarkGatewayGoverned(b *testing.B) {
	benchGoverned(b, govern.NewJSONHandler(io.Discard, nil), govern.DefaultLogQueue)
}

// BenchmarkGatewayGovernedCallDeadline is BenchmarkGatewayGoverned with a
// deadline for the whole call (hub.Options.Deadline), as toolhub serve
// gives every call.
func BenchmarkGatewayGovernedCallDeadline(b *testing.B) {
	benchGovernedDeadline(b, govern.NewJSONHandler(io.Discard, nil), govern.DefaultLogQueue, time.Minute)
}

// BenchmarkGatewayGovernedLogInline is BenchmarkGatewayGoverned with each
// line encoded and written by its call (no log queue).
func BenchmarkGatewayGovernedLogInline(b *testing.B) {
	benchGoverned(b, govern.NewJSONHandler(io.Discard, nil), 0)
}

// BenchmarkGatewayGovernedStdlibLog is BenchmarkGatewayGovernedLogInline
// with the decision log written by log/slog's own JSON handler (the same
// bytes).
func BenchmarkGatewayGovernedStdlibLog(b *testing.B) {
	benchGoverned(b, slog.NewJSONHandler(io.Discard, nil), 0)
}

func benchGoverned(b *testing.B, h slog.Handler, queue int) { benchGovernedDeadline(b, h, queue, 0) }

func benchGovernedDeadline(b *testing.B, h slog.Handler, queue int, deadline time.Duration) {
	reg := prometheus.NewRegistry()
	g := govern.New(&govern.Options{
		VendorLimits: func(string) registry.Limits { return registry.Limits{RPS: 1e9, Burst: 1 << 20, Concurrency: 1 << 10} },
		TenantRule:   func(string) (limit.Rule, bool) { return limit.Rule{Rate: 1e9, Burst: 1 << 20}, true },
		Logger:       slog.New(h),
		LogQueue:     queue,
		Registerer:   reg,
	})
	res := &hub.Result{Structured: map[string]any{"temp_c": 21.0}}
	// A plain lookup, as servers.Manager's (the test helper upstreams
	// counts calls, which costs allocations toolhub does not make).
	var up hub.Invoker = hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		r := *res
		return &r, nil
	})
	ups := hub.UpstreamsFunc(func(vendor string) (hub.Invoker, bool) { return up, vendor == "weather-a" })
	gw := hub.NewGateway(catalog(b), ups, &hub.Options{
		Outer:    []hub.Middleware{g.OuterMiddleware()},
		Vendor:   []hub.Middleware{g.VendorMiddleware()},
		Deadline: func(registry.Entry) time.Duration { return deadline },
	})
	args := map[string]any{"city": "Oslo"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gw.Call(ctx, &hub.Call{Tenant: "acme", Name: "weather-a__current", Arguments: args}); err != nil {
			b.Fatal(err)
		}
	}
	g.Close()
	if queue > 0 {
		// The share of lines that found the queue full and were encoded
		// by their call.
		b.ReportMetric(counterValue(b, reg, "toolhub_decision_log_inline_total")/float64(b.N), "inline/op")
	}
}

// counterValue is the value of the counter name in reg.
func counterValue(b *testing.B, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	b.Fatalf("no %s", name)
	return 0
}
