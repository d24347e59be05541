package govern_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/breaker"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/hub/retry"
)

// TestProbeReadmissionStartsTrials: a probe that finds an ejected vendor
// healthy again lets its open breaker's trial calls through at once,
// instead of after the rest of its cool-down (up to 120s), and both
// changes reach the options' callbacks (the job queue wakes on them).
func TestProbeReadmissionStartsTrials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var healthy atomic.Bool
		var readmitted, halfOpen atomic.Int32
		ups := &upstreams{fns: map[string]hub.InvokerFunc{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			if healthy.Load() {
				return answer(1)(ctx, c)
			}
			return failWith(httpError(503, 0))(ctx, c)
		}}}
		g := govern.New(&govern.Options{
			Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
			Retry:  retry.Policy{Max: -1},
			Breaker: func(string) *breaker.Options {
				return &breaker.Options{CoolDown: 2 * time.Minute, OnStateChange: func(c breaker.Change) {
					if c.To == breaker.HalfOpen {
						halfOpen.Add(1)
					}
				}}
			},
			Health: &breaker.HealthOptions{OnChange: func(c breaker.HealthChange) {
				if !c.Ejected {
					readmitted.Add(1)
				}
			}},
		})
		gw := hub.NewGateway(catalog(t), ups, &hub.Options{Vendor: []hub.Middleware{g.VendorMiddleware()}})
		for range 5 {
			_, _ = gw.Call(t.Context(), &hub.Call{Name: "weather-a__current", Arguments: map[string]any{"city": "x"}})
		}
		if st := g.Status("weather-a").Breaker.State; st != "open" {
			t.Fatalf("breaker %s after 5 failures, want open", st)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		g.StartProbes(ctx, "weather-a", time.Second, func(ctx context.Context) error {
			if healthy.Load() {
				return nil
			}
			return errors.New("probe: HTTP 503")
		})
		time.Sleep(2500 * time.Millisecond) // probes at 0s, 1s, 2s (fake time): ejected
		synctest.Wait()
		if !g.Status("weather-a").Ejected {
			t.Fatalf("not ejected after 3 failed probes")
		}
		healthy.Store(true)
		time.Sleep(time.Second) // the next probe succeeds
		synctest.Wait()
		st := g.Status("weather-a")
		if st.Ejected || st.Breaker.State != "half_open" || readmitted.Load() != 1 || halfOpen.Load() != 1 {
			t.Fatalf("after a good probe: ejected %v, breaker %s, readmissions %d, half-opens %d; want a half-open breaker 116s before its cool-down ends",
				st.Ejected, st.Breaker.State, readmitted.Load(), halfOpen.Load())
		}
		g.StopProbes("weather-a")
	})
}
