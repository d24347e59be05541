package govern_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/breaker"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/hub/retry"
)

func jobCall(id string) hub.Call { return hub.Call{Meta: map[string]any{hub.MetaJobID: id}} }

// TestJobCallsBypassTheRamp: during a recovery ramp a queued job's call is
// the backlog, not interactive traffic: it reaches the vendor whatever the
// ramp's share (the ramp used to skip 95% of them at its first step, and
// each skipped job waited and came back), and it does not count against
// the share of the interactive calls, which still get exactly 5%.
func TestJobCallsBypassTheRamp(t *testing.T) {
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": answer(1)}, &govern.Options{Retry: retry.Policy{Max: -1}})
	e.gov.Breaker("weather-a").Trip()
	e.clock.Advance(30 * time.Second) // the cool-down
	for i := range 3 {                // half-open trials
		if _, err := e.call(t, "weather-a__current", hub.Call{}); err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
	}
	if st := e.gov.Status("weather-a"); st.Breaker.State != "closed" || st.Ramp.Done {
		t.Fatalf("status %+v, want closed and ramping", st)
	}
	before := e.ups.count("weather-a")
	for i := range 100 {
		if _, err := e.call(t, "weather-a__current", jobCall("job_"+strconv.Itoa(i))); err != nil {
			t.Fatalf("job call %d refused during the ramp: %v", i, err)
		}
	}
	if n := e.ups.count("weather-a") - before; n != 100 {
		t.Errorf("%d of 100 job calls reached the vendor during the ramp, want 100", n)
	}
	before = e.ups.count("weather-a")
	for range 100 {
		e.call(t, "weather-a__current", hub.Call{})
	}
	if n := e.ups.count("weather-a") - before; n != 5 {
		t.Errorf("%d of 100 interactive calls reached the vendor at the 5%% step, want 5", n)
	}
}

// TestPingsWhileAJobWaits: a vendor probed by ping alone, whose breaker is
// open, is pinged every JobPingEvery while a queued job waits for it (a
// job's call found it down), and only then; a good ping turns the breaker
// half-open on evidence, 250ms after the vendor came back instead of at
// the end of a 2-minute cool-down; failed pings eject nothing.
func TestPingsWhileAJobWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var healthy atomic.Bool
		var pings atomic.Int32
		var evidence atomic.Int32
		ups := &upstreams{fns: map[string]hub.InvokerFunc{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			if healthy.Load() {
				return answer(1)(ctx, c)
			}
			return failWith(httpError(503, 0))(ctx, c)
		}}}
		g := govern.New(&govern.Options{
			Logger:        slog.New(slog.NewJSONHandler(io.Discard, nil)),
			Retry:         retry.Policy{Max: -1},
			JobTrialEvery: -1, // the pings alone find the recovery
			Breaker: func(string) *breaker.Options {
				return &breaker.Options{CoolDown: 2 * time.Minute, OnStateChange: func(c breaker.Change) {
					if c.To == breaker.HalfOpen && c.Evidence {
						evidence.Add(1)
					}
				}}
			},
		})
		gw := hub.NewGateway(catalog(t), ups, &hub.Options{Vendor: []hub.Middleware{g.VendorMiddleware()}})
		call := func(c hub.Call) error {
			c.Name, c.Arguments = "weather-a__current", map[string]any{"city": "x"}
			_, err := gw.Call(t.Context(), &c)
			return err
		}
		for range 5 {
			_ = call(hub.Call{})
		}
		if st := g.Status("weather-a").Breaker.State; st != "open" {
			t.Fatalf("breaker %s after 5 failures, want open", st)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		g.StartPingProbes(ctx, "weather-a", 10*time.Second, func(ctx context.Context) error {
			pings.Add(1)
			if healthy.Load() {
				return nil
			}
			return errors.New("ping: HTTP 503")
		})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := pings.Load(); n != 1 {
			t.Fatalf("%d pings in 2s with no job waiting, want 1 (the 10s probe)", n)
		}
		if err := call(jobCall("job_1")); !errors.Is(err, govern.ErrRefused) {
			t.Fatalf("a job's call to an open breaker: %v, want refused", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := pings.Load(); n != 1+4 {
			t.Fatalf("%d pings 1s after a job was refused, want 5 (the probe, then every 250ms)", n)
		}
		if st := g.Status("weather-a"); st.Breaker.State != "open" || st.Ejected {
			t.Fatalf("after failed pings: breaker %s, ejected %v; want open, not ejected", st.Breaker.State, st.Ejected)
		}
		healthy.Store(true)
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		if st := g.Status("weather-a").Breaker.State; st != "half_open" || evidence.Load() != 1 {
			t.Fatalf("250ms after the vendor came back: breaker %s, %d half-opens on evidence; want half_open, 1", st, evidence.Load())
		}
		for i := range 3 {
			if err := call(jobCall("job_1")); err != nil {
				t.Fatalf("trial %d: %v", i, err)
			}
		}
		if st := g.Status("weather-a").Breaker.State; st != "closed" {
			t.Fatalf("after 3 good trials: %s, want closed", st)
		}
		before := pings.Load()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := pings.Load() - before; n != 0 {
			t.Errorf("%d pings of a closed breaker", n)
		}
		g.StopProbes("weather-a")
	})
}
