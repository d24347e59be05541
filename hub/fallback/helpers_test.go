package fallback_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/registry"

	"github.com/toolhub/toolhub/internal/x/clocktest"
)

// clock is a settable clock (internal/x/clocktest).
type clock = clocktest.Clock

func newClock() *clock { return clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// seq is an injectable Rand that returns 0, 1/n, 2/n, … (mod 1).
type seq struct {
	mu   sync.Mutex
	i, n int
}

func (s *seq) Float64() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := float64(s.i%s.n) / float64(s.n)
	s.i++
	return v
}

// vendor is a fake upstream whose behaviour a test switches.
type vendor struct {
	calls atomic.Int64
	mode  atomic.Value // "ok", "fail", "timeout"
	temp  float64
}

func (v *vendor) invoke(ctx context.Context, c *hub.Call) (*hub.Result, error) {
	v.calls.Add(1)
	switch m, _ := v.mode.Load().(string); m {
	case "fail":
		return nil, &hub.Error{Code: hub.CodeUnavailable, Message: "vendor down"}
	case "privacy":
		return nil, &hub.Error{Code: hub.CodePrivacy, Message: "too sensitive"}
	case "timeout":
		return nil, &hub.Error{Code: hub.CodeTimeout, Message: "too slow"}
	}
	return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("sunny")}, Structured: map[string]any{"temp_c": v.temp}}, nil
}

type vendors map[string]*vendor

func (vs vendors) Upstream(id string) (hub.Invoker, bool) {
	v, ok := vs[id]
	if !ok {
		return nil, false
	}
	return hub.InvokerFunc(v.invoke), true
}

func newVendors() vendors {
	return vendors{"weather-a": {temp: 1}, "weather-b": {temp: 2}}
}

const weatherIn = `{"type":"object","required":["city"],"properties":{"city":{"type":"string"}},"additionalProperties":false}`
const weatherOut = `{"type":"object","required":["temp_c"],"properties":{"temp_c":{"type":"number"}}}`

// Capabilities of the test catalog: all share the chain weather-a → weather-b.
var capNames = []string{"weather.current", "weather.queued", "weather.risky", "weather.canary", "weather.cheap"}

func catalog(t testing.TB) *registry.Catalog {
	cat := registry.NewCatalog()
	for _, v := range []string{"weather-a", "weather-b"} {
		if errs := cat.SetVendorTools(v, []registry.ToolDef{{Name: "current", InputSchema: json.RawMessage(weatherIn), OutputSchema: json.RawMessage(weatherOut), Annotations: json.RawMessage(`{"readOnlyHint":true}`)}}); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	var caps []registry.Capability
	for _, n := range capNames {
		caps = append(caps, registry.Capability{
			Name: n, InputSchema: json.RawMessage(weatherIn), OutputSchema: json.RawMessage(`{"type":"object","required":["temp"]}`),
			Chain: []registry.ChainStep{
				{Tool: "weather-a/current", Result: []registry.Mapping{{From: "/temp_c", To: "/temp"}}},
				{Tool: "weather-b/current", Result: []registry.Mapping{{From: "/temp_c", To: "/temp"}}},
			},
		})
	}
	if errs := cat.SetCapabilities(caps); len(errs) > 0 {
		t.Fatal(errs)
	}
	return cat
}

var testConfig = fallback.Config{Capabilities: map[string]fallback.CapabilityConfig{
	"weather.current": {Core: true},
	"weather.queued":  {Queue: true},
	"weather.risky":   {HighRisk: true, Queue: true},
	"weather.canary":  {Policy: fallback.Weighted, Weights: map[string]float64{"weather-b/current": 5}},
	"weather.cheap":   {Policy: fallback.Cheapest},
}}

// jobs is a fake Enqueuer and Parker.
type jobs struct {
	mu     sync.Mutex
	queued []string
	parked []string
}

func (j *jobs) Enqueue(ctx context.Context, c *hub.Call) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.queued = append(j.queued, c.Name)
	return fmt.Sprintf("job-%d", len(j.queued)), nil
}

func (j *jobs) Park(ctx context.Context, c *hub.Call, reason string) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.parked = append(j.parked, reason)
	return fmt.Sprintf("review-%d", len(j.parked)), nil
}

func call(gw *hub.Gateway, name string) (*hub.Result, error) {
	return gw.Call(context.Background(), &hub.Call{Name: name, Tenant: "acme", Arguments: map[string]any{"city": "Oslo"}})
}

func registryDuration(d time.Duration) registry.Duration { return registry.Duration(d) }
