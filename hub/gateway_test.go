package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/registry"
)

// vendors is an Upstreams of in-process invokers, standing in for servers.Manager.
type vendors map[string]InvokerFunc

func (v vendors) Upstream(id string) (Invoker, bool) {
	f, ok := v[id]
	return f, ok
}

const weatherIn = `{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"units":{"enum":["metric","imperial"]}},"additionalProperties":false}`
const weatherOut = `{"type":"object","required":["temp_c"],"properties":{"temp_c":{"type":"number"}}}`

func testCatalog(t testing.TB) *registry.Catalog {
	cat := registry.NewCatalog()
	for _, v := range []string{"weather-a", "weather-b"} {
		in := weatherIn
		if v == "weather-b" {
			in = strings.ReplaceAll(in, "city", "location")
		}
		if errs := cat.SetVendorTools(v, []registry.ToolDef{{Name: "current", InputSchema: json.RawMessage(in), OutputSchema: json.RawMessage(weatherOut)}}); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	errs := cat.SetCapabilities([]registry.Capability{{
		Name: "weather.current", InputSchema: json.RawMessage(weatherIn), OutputSchema: json.RawMessage(`{"type":"object","required":["temp"]}`),
		Chain: []registry.ChainStep{
			{Tool: "weather-a/current", Result: []registry.Mapping{{From: "/temp_c", To: "/temp"}}},
			{Tool: "weather-b/current", Args: []registry.Mapping{{From: "/city", To: "/location"}}, Result: []registry.Mapping{{From: "/temp_c", To: "/temp"}}},
		},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return cat
}

func ok(temp float64) InvokerFunc {
	return func(ctx context.Context, c *Call) (*Result, error) {
		return &Result{Content: []mcp.Content{mcp.NewTextContent("sunny")}, Structured: map[string]any{"temp_c": temp}}, nil
	}
}

func TestGatewayErrors(t *testing.T) {
	hang := InvokerFunc(func(ctx context.Context, c *Call) (*Result, error) { <-ctx.Done(); return nil, ctx.Err() })
	tests := []struct {
		name    string
		up      vendors
		call    Call
		want    Code
		message string
	}{
		{"unknown tool", vendors{}, Call{Name: "nope__x"}, CodeUnknownTool, `unknown tool "nope__x"`},
		{"schema violation", vendors{}, Call{Name: "weather-a__current", Arguments: map[string]any{"city": 3.0}}, CodeInvalidArguments, "/city"},
		{"missing required", vendors{}, Call{Name: "weather-a__current"}, CodeInvalidArguments, "city"},
		{"not connected", vendors{}, Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}, CodeUnavailable, "not connected"},
		{"lying vendor", vendors{"weather-a": func(ctx context.Context, c *Call) (*Result, error) {
			return &Result{Structured: map[string]any{"temp_c": "warm"}}, nil
		}}, Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}, CodeInvalidOutput, "/temp_c"},
		{"no structured content", vendors{"weather-a": func(ctx context.Context, c *Call) (*Result, error) {
			return &Result{Content: []mcp.Content{mcp.NewTextContent("hi")}}, nil
		}}, Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}, CodeInvalidOutput, "no structuredContent"},
		{"vendor timeout", vendors{"weather-a": hang}, Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}, CodeTimeout, "did not answer within"},
		{"all vendors of a capability fail", vendors{"weather-a": hang, "weather-b": func(ctx context.Context, c *Call) (*Result, error) {
			return nil, &Error{Code: CodeRateLimited, Message: "slow down"}
		}}, Call{Name: "weather.current", Arguments: map[string]any{"city": "Oslo"}}, CodeUnavailable, "every vendor failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := NewGateway(testCatalog(t), tt.up, &Options{DefaultTimeout: 20 * time.Millisecond})
			_, err := gw.Call(t.Context(), &tt.call)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Code != tt.want || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("got %s: %s; want %s mentioning %q", e.Code, e.Message, tt.want, tt.message)
			}
		})
	}
}

func TestGatewayProvenance(t *testing.T) {
	gw := NewGateway(testCatalog(t), vendors{"weather-a": ok(21)}, nil)
	res, err := gw.Call(t.Context(), &Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Provenance
	if p.Vendor != "weather-a" || p.Tool != "current" || p.Attempts != 1 || len(p.CallID) != 32 || p.Fallback {
		t.Errorf("provenance = %+v", p)
	}
}

func TestCapabilityFallsBackWithMapping(t *testing.T) {
	var gotArgs map[string]any
	up := vendors{
		"weather-a": func(ctx context.Context, c *Call) (*Result, error) {
			return nil, &Error{Code: CodeUnavailable, Message: "down"}
		},
		"weather-b": func(ctx context.Context, c *Call) (*Result, error) {
			gotArgs = c.Arguments
			return ok(7)(ctx, c)
		},
	}
	gw := NewGateway(testCatalog(t), up, nil)
	res, err := gw.Call(t.Context(), &Call{Name: "weather_current", Arguments: map[string]any{"city": "Oslo", "units": "metric"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"location": "Oslo", "units": "metric"}, gotArgs); diff != "" {
		t.Errorf("vendor arguments (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"temp": 7.0}, res.Structured); diff != "" {
		t.Errorf("canonical result (-want +got):\n%s", diff)
	}
	p := res.Provenance
	if p.Vendor != "weather-b" || !p.Fallback || p.Capability != "weather.current" || p.Attempts != 2 {
		t.Errorf("provenance = %+v", p)
	}
}

func TestCallerDeadlineWins(t *testing.T) {
	gw := NewGateway(testCatalog(t), vendors{"weather-a": func(ctx context.Context, c *Call) (*Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}, &Options{DefaultTimeout: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := gw.Call(ctx, &Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}})
	if CodeOf(err) != CodeCanceled {
		t.Fatalf("err = %v, want canceled", err)
	}
}

func TestMiddlewareOrder(t *testing.T) {
	var order []string
	mw := func(name string) Middleware {
		return func(next Invoker) Invoker {
			return InvokerFunc(func(ctx context.Context, c *Call) (*Result, error) {
				order = append(order, name+">"+c.Vendor())
				return next.Invoke(ctx, c)
			})
		}
	}
	gw := NewGateway(testCatalog(t), vendors{"weather-a": ok(1)}, &Options{
		Outer:  []Middleware{mw("outer1"), mw("outer2")},
		Call:   []Middleware{mw("call")},
		Vendor: []Middleware{mw("vendor")},
	})
	if _, err := gw.Call(t.Context(), &Call{Name: "weather-a__current", Arguments: map[string]any{"city": "x"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"outer1>", "outer2>", "call>weather-a", "vendor>weather-a"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Error(diff)
	}
}

func TestInvisibleToolIsUnknown(t *testing.T) {
	gw := NewGateway(testCatalog(t), vendors{"weather-a": ok(1)}, &Options{
		Visible: func(tenant string, e registry.Entry) bool { return tenant == "acme" },
	})
	_, err := gw.Call(t.Context(), &Call{Tenant: "other", Name: "weather-a__current", Arguments: map[string]any{"city": "x"}})
	if CodeOf(err) != CodeUnknownTool {
		t.Fatalf("err = %v, want unknown_tool", err)
	}
	if _, err := gw.Call(t.Context(), &Call{Tenant: "acme", Name: "weather-a__current", Arguments: map[string]any{"city": "x"}}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkGatewayCall measures the in-process overhead of one call with
// schema validation on a small schema (the upstream answers at once).
func BenchmarkGatewayCall(b *testing.B) {
	res := &Result{Structured: map[string]any{"temp_c": 21.0}}
	gw := NewGateway(testCatalog(b), vendors{"weather-a": func(ctx context.Context, c *Call) (*Result, error) {
		r := *res
		return &r, nil
	}}, nil)
	args := map[string]any{"city": "Oslo", "units": "metric"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gw.Call(ctx, &Call{Name: "weather-a__current", Arguments: args}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPrivacyGate(t *testing.T) {
	var reachedA bool
	up := vendors{
		"weather-a": func(ctx context.Context, c *Call) (*Result, error) { reachedA = true; return ok(1)(ctx, c) },
		"weather-b": func(ctx context.Context, c *Call) (*Result, error) {
			if c.Arguments["location"] != "[redacted]" {
				t.Errorf("weather-b got %v, want redacted arguments", c.Arguments)
			}
			return ok(2)(ctx, c)
		},
	}
	gw := NewGateway(testCatalog(t), up, &Options{
		MaxDataLevel: func(v string) int { return map[string]int{"weather-a": 1, "weather-b": 3}[v] },
		Redact: func(v string, args map[string]any) map[string]any {
			out := map[string]any{}
			for k := range args {
				out[k] = "[redacted]"
			}
			return out
		},
	})
	_, err := gw.Call(t.Context(), &Call{Name: "weather-a__current", DataLevel: 3, Arguments: map[string]any{"city": "Oslo"}})
	if CodeOf(err) != CodePrivacy || reachedA {
		t.Fatalf("L3 call to an L1 vendor: err = %v, reached = %v", err, reachedA)
	}
	res, err := gw.Call(t.Context(), &Call{Name: "weather.current", DataLevel: 2, Arguments: map[string]any{"city": "Oslo"}})
	if err != nil || res.Provenance.Vendor != "weather-b" || reachedA {
		t.Fatalf("capability with L2 data: %v %+v, reached weather-a = %v", err, res, reachedA)
	}
}

// TestPrecheckCallValidatesOnce: a call PrecheckCall validated is not
// validated again by the gateway while its name resolves to the same
// entry (arguments changed after the precheck, which a caller must not
// do, show it), and is validated again once the catalog changed the entry.
func TestPrecheckCallValidatesOnce(t *testing.T) {
	cat := testCatalog(t)
	gw := NewGateway(cat, vendors{"weather-a": ok(21), "weather-b": ok(22)}, nil)

	bad := &Call{Name: "weather-a__current", Arguments: map[string]any{"city": 3.0}}
	if err := gw.PrecheckCall(bad); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("PrecheckCall of bad arguments = %v, want invalid_arguments", err)
	}
	if _, err := gw.Call(t.Context(), bad); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("Call after a failed PrecheckCall = %v, want invalid_arguments", err)
	}

	c := &Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}
	if err := gw.PrecheckCall(c); err != nil {
		t.Fatal(err)
	}
	c.Arguments["units"] = "kelvin" // not in the enum: validating again would refuse it
	if _, err := gw.Call(t.Context(), c); err != nil {
		t.Fatalf("the gateway validated the prechecked arguments again: %v", err)
	}
	// The mark is the gateway's for one call: a second Call of the same
	// *Call validates.
	if _, err := gw.Call(t.Context(), c); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("second Call of a prechecked call = %v, want invalid_arguments", err)
	}

	c = &Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}
	if err := gw.PrecheckCall(c); err != nil {
		t.Fatal(err)
	}
	stricter := strings.Replace(weatherIn, `"required":["city"]`, `"required":["city","units"]`, 1)
	if errs := cat.SetVendorTools("weather-a", []registry.ToolDef{{Name: "current", InputSchema: json.RawMessage(stricter), OutputSchema: json.RawMessage(weatherOut)}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, err := gw.Call(t.Context(), c); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("Call after the tool's schema changed = %v, want invalid_arguments (validated against the new schema)", err)
	}
}

// BenchmarkGatewayPrecheckedCall is a front door's call: PrecheckCall,
// then the call, which does not validate the arguments again.
func BenchmarkGatewayPrecheckedCall(b *testing.B) {
	res := &Result{Structured: map[string]any{"temp_c": 21.0}}
	gw := NewGateway(testCatalog(b), vendors{"weather-a": func(ctx context.Context, c *Call) (*Result, error) {
		r := *res
		return &r, nil
	}}, nil)
	args := map[string]any{"city": "Oslo", "units": "metric"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c := &Call{Name: "weather-a__current", Arguments: args}
		if err := gw.PrecheckCall(c); err != nil {
			b.Fatal(err)
		}
		if _, err := gw.Call(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}
