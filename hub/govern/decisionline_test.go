package govern_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/breaker"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/registry"
	"go.opentelemetry.io/otel/trace"
)

// logEnv is a governed gateway whose decision log goes to h, with
// upstreams that answer, fail, flag and take their time by the city asked.
type logEnv struct {
	gov *govern.Governor
	gw  *hub.Gateway
}

// newLogEnv returns the gateway; queue is the governor's Options.LogQueue.
func newLogEnv(t testing.TB, h slog.Handler, queue int) *logEnv {
	g := govern.New(&govern.Options{
		VendorLimits: func(string) registry.Limits { return registry.Limits{RPS: 1e6, Burst: 1 << 20, Concurrency: 64} },
		// Breakers that never open: a breaker's change is a line of its
		// own, logged at once.
		Breaker: func(string) *breaker.Options {
			return &breaker.Options{MinCalls: 1 << 30, ConsecutiveFailures: 1 << 30}
		},
		Logger:   slog.New(h),
		LogQueue: queue,
	})
	g.SetDebug("debugged", true)
	up := hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		city, _ := c.Arguments["city"].(string)
		time.Sleep(1500 * time.Microsecond) // synctest's clock: every run takes as long
		switch {
		case strings.HasPrefix(city, "fail"):
			return nil, &hub.Error{Code: hub.CodeUpstream, Message: "vendor knows no " + city}
		case strings.HasPrefix(city, "flag"):
			return &hub.Result{Structured: map[string]any{"temp_c": 1.0}, Findings: []hub.Finding{{Field: "content/0/text", Rule: "ignore-previous", Span: "ignore " + city}}}, nil
		}
		return &hub.Result{Structured: map[string]any{"temp_c": 21.5}}, nil
	})
	ups := hub.UpstreamsFunc(func(string) (hub.Invoker, bool) { return up, true })
	gw := hub.NewGateway(catalog(t), ups, &hub.Options{
		Outer:  []hub.Middleware{g.OuterMiddleware()},
		Vendor: []hub.Middleware{g.VendorMiddleware()},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	return &logEnv{gov: g, gw: gw}
}

// burst makes n calls of every kind a decision line has: answered, failed
// (its argument scrubbed from the error), flagged, unknown, invalid,
// through a capability, traced, of a plan, batch, debugged, with
// characters JSON escapes.
func (e *logEnv) burst(n int) {
	traced := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{0xa, 0xb, 0xc, 0xd, 1, 2, 3, 4}, TraceFlags: trace.FlagsSampled}))
	for i := range n {
		id := "call-" + strings.Repeat("x", i%3) + string(rune('a'+i%26))
		calls := []struct {
			ctx context.Context
			c   hub.Call
		}{
			{context.Background(), hub.Call{Tenant: "acme", Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}},
			{context.Background(), hub.Call{Tenant: "acme", Name: "weather-a__current", Arguments: map[string]any{"city": "fail-Bergen"}}},
			{context.Background(), hub.Call{Tenant: "acme", Name: "weather-b__current", Arguments: map[string]any{"city": "flag-Ålesund"}}},
			{context.Background(), hub.Call{Tenant: "acme", Name: "nope__nothing", Arguments: map[string]any{"city": "Oslo"}}},
			{context.Background(), hub.Call{Tenant: "acme", Name: "weather-a__current", Arguments: map[string]any{"town": 3}}},
			{context.Background(), hub.Call{Tenant: "acme", Name: "weather.current", Arguments: map[string]any{"city": "Tromsø"}, PlanID: "plan-7"}},
			{traced, hub.Call{Tenant: "t\"q<&>\u2028", Name: "weather-b__current", Arguments: map[string]any{"city": "Oslo"}, Priority: hub.Batch}},
			{context.Background(), hub.Call{Tenant: "debugged", Name: "weather-a__current", Arguments: map[string]any{"city": "fail-Oslo"}}},
		}
		for j, k := range calls {
			k.c.ID = id + "-" + string(rune('0'+j))
			_, _ = e.gw.Call(k.ctx, &k.c)
		}
	}
}

// lines splits a log into its lines.
func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// TestDecisionLineSameBytes: the decision lines govern's JSON handler
// writes straight from the calls' lines are the lines log/slog's JSON
// handler writes from their records, byte for byte, for a burst of calls
// of every kind.
func TestDecisionLineSameBytes(t *testing.T) {
	run := func(t *testing.T, h func(*syncBuffer) slog.Handler) string {
		var got string
		synctest.Test(t, func(t *testing.T) { // each run starts at the same (fake) time
			w := &syncBuffer{}
			newLogEnv(t, h(w), 0).burst(40)
			got = w.String()
		})
		return got
	}
	want := run(t, func(w *syncBuffer) slog.Handler { return slog.NewJSONHandler(w, nil) })
	if n := len(lines(want)); n != 40*8 {
		t.Fatalf("%d lines, want %d", n, 40*8)
	}
	for _, field := range []string{`"findings":`, `"arguments":{"city":"fail-Oslo"}`, `"trace_id":"0102030405060708090a0b0c0d0e0f10","span_id":"0a0b0c0d01020304"`,
		`"plan_id":"plan-7"`, `"priority":"batch"`, `"code":"upstream_error","error":"vendor knows no [redacted]"`, `"tenant":"t\"q<&>\u2028"`, `"latency_ms":1.5,`} {
		if !strings.Contains(want, field) {
			t.Errorf("the burst logs no %s", field)
		}
	}
	if got := run(t, func(w *syncBuffer) slog.Handler { return govern.NewJSONHandler(w, nil) }); got != want {
		t.Errorf("govern's lines differ from slog's:\n got %s\nwant %s", got, want)
	}
}
