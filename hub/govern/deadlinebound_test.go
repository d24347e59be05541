package govern_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/registry"
)

// TestNoCallOutlivesItsDeadline: whatever its vendors do, a synchronous
// call returns by its deadline plus 100ms (issue 18's bound), measured on
// synctest's fake clock: a vendor that hangs (until the call's context
// ends), a vendor asking to retry after the deadline, a bulkhead whose wait is
// longer than the deadline, a capability whose every vendor hangs, with
// the caller's deadline or the hub's default for the tool.
func TestNoCallOutlivesItsDeadline(t *testing.T) {
	const bound = 100 * time.Millisecond
	cases := []struct {
		name     string
		tool     string
		caller   time.Duration // the caller's deadline; zero: the hub's (3s)
		vendor   func() hub.InvokerFunc
		occupied bool // another call holds the vendor's one concurrency slot
	}{
		{name: "vendor hangs, caller's deadline", tool: "weather-a__current", caller: 2 * time.Second,
			vendor: func() hub.InvokerFunc {
				return func(ctx context.Context, c *hub.Call) (*hub.Result, error) { <-ctx.Done(); return nil, ctx.Err() }
			}},
		{name: "vendor hangs, hub's deadline", tool: "weather-a__current",
			vendor: func() hub.InvokerFunc {
				return func(ctx context.Context, c *hub.Call) (*hub.Result, error) { <-ctx.Done(); return nil, ctx.Err() }
			}},
		{name: "retry-after beyond the deadline", tool: "weather-a__current", caller: 2 * time.Second,
			vendor: func() hub.InvokerFunc {
				return func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
					return nil, &hub.Error{Code: hub.CodeRateLimited, RetryAfter: 3 * time.Second, Message: "slow down"}
				}
			}},
		{name: "bulkhead wait beyond the deadline", tool: "weather-a__current", caller: time.Second, occupied: true,
			vendor: func() hub.InvokerFunc {
				return func(ctx context.Context, c *hub.Call) (*hub.Result, error) { <-ctx.Done(); return nil, ctx.Err() }
			}},
		{name: "every vendor of a capability hangs", tool: "weather.current",
			vendor: func() hub.InvokerFunc {
				return func(ctx context.Context, c *hub.Call) (*hub.Result, error) { <-ctx.Done(); return nil, ctx.Err() }
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := tc.vendor()
				ups := &upstreams{fns: map[string]hub.InvokerFunc{"weather-a": f, "weather-b": f}}
				g := govern.New(&govern.Options{
					Logger:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
					BulkheadWait: 10 * time.Second,
					VendorLimits: func(string) registry.Limits { return registry.Limits{Concurrency: 1} },
				})
				gw := hub.NewGateway(catalog(t), ups, &hub.Options{
					DefaultTimeout: time.Second,
					Deadline:       func(registry.Entry) time.Duration { return 3 * time.Second },
					Outer:          []hub.Middleware{g.OuterMiddleware()},
					Vendor:         []hub.Middleware{g.VendorMiddleware()},
				})
				call := &hub.Call{Name: tc.tool, Arguments: map[string]any{"city": "Oslo"}}
				if tc.occupied {
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					go gw.Call(ctx, &hub.Call{Name: tc.tool, Arguments: map[string]any{"city": "Bergen"}})
					synctest.Wait() // it holds the slot
				}
				ctx, deadline := t.Context(), 3*time.Second
				if tc.caller > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.caller)
					defer cancel()
					deadline = tc.caller
				}
				start := time.Now() // fake time: synctest's clock
				done := make(chan error, 1)
				go func() { _, err := gw.Call(ctx, call); done <- err }()
				select {
				case err := <-done:
					if took := time.Since(start); took > deadline+bound || err == nil {
						t.Errorf("the call took %v (%v); want an error within its deadline %v plus %v", took, err, deadline, bound)
					}
				case <-time.After(deadline + bound):
					t.Errorf("the call still runs %v after it started, over its deadline %v plus %v", deadline+bound, deadline, bound)
					<-done
				}
			})
		})
	}
}
