package cache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/registry"
)

type fixture struct {
	clk   *clock
	layer *cache.Layer
	gw    *hub.Gateway
	calls atomic.Int64
	temp  atomic.Int64  // the answer of weather-a
	gate  chan struct{} // when non-nil, weather-a waits for it to close
	fail  atomic.Bool   // weather-a fails
}

func newFixture(t testing.TB, cfg cache.Config, dataLevel func(*hub.Call) int) *fixture {
	f := &fixture{clk: newClock()}
	f.temp.Store(20)
	f.layer = cache.New(&cache.Options{Config: cfg, DataLevel: dataLevel, Now: f.clk.Now, Cache: cache.NewMemory(&cache.MemoryOptions{Now: f.clk.Now})})
	ups := upstreams{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		f.calls.Add(1)
		if f.gate != nil {
			<-f.gate
		}
		if f.fail.Load() {
			return nil, &hub.Error{Code: hub.CodeUnavailable, Message: "down"}
		}
		return answer(float64(f.temp.Load())), nil
	}}
	f.gw = hub.NewGateway(catalog(t), ups, &hub.Options{Call: []hub.Middleware{f.layer.Middleware()}, Now: f.clk.Now})
	return f
}

func (f *fixture) call(t testing.TB, name, tenant string) *hub.Result {
	t.Helper()
	r, err := f.gw.Call(context.Background(), &hub.Call{Name: name, Tenant: tenant, Arguments: map[string]any{"city": "Oslo"}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var weather10m = cache.Config{Tools: map[string]cache.Policy{
	"weather.current":   {TTL: registry.Duration(10 * time.Minute)},
	"weather-a/current": {TTL: registry.Duration(10 * time.Minute), StaleWhileRevalidate: registry.Duration(time.Minute), Personal: true},
}}

func TestFreshHit(t *testing.T) {
	f := newFixture(t, weather10m, nil)
	r := f.call(t, "weather.current", "")
	if r.Provenance.Cached || f.calls.Load() != 1 {
		t.Fatalf("first call: %+v, %d upstream calls", r.Provenance, f.calls.Load())
	}
	f.clk.Advance(30 * time.Second)
	f.temp.Store(99)
	r = f.call(t, "weather.current", "")
	p := r.Provenance
	if !p.Cached || p.Stale || p.AgeSeconds != 30 || p.Capability != "weather.current" || p.Vendor != "weather-a" || f.calls.Load() != 1 {
		t.Fatalf("second call: %+v, %d upstream calls", p, f.calls.Load())
	}
	if got := r.Structured.(map[string]any)["temp"]; got != 20.0 {
		t.Errorf("cached temp = %v, want 20", got)
	}
	// Expired, no stale-while-revalidate: a miss.
	f.clk.Advance(10 * time.Minute)
	r = f.call(t, "weather.current", "")
	if r.Provenance.Cached || f.calls.Load() != 2 || r.Structured.(map[string]any)["temp"] != 99.0 {
		t.Fatalf("after ttl: %+v %v, %d upstream calls", r.Provenance, r.Structured, f.calls.Load())
	}
}

func TestNotCached(t *testing.T) {
	tests := []struct {
		name  string
		cfg   cache.Config
		level func(*hub.Call) int
	}{
		{"not listed", cache.Config{}, nil},
		{"no-cache", cache.Config{Tools: map[string]cache.Policy{"weather.current": {TTL: registry.Duration(time.Minute), NoCache: true}}}, nil},
		{"private data L2", weather10m, func(*hub.Call) int { return 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.cfg, tt.level)
			for range 3 {
				if r := f.call(t, "weather.current", ""); r.Provenance.Cached {
					t.Fatal("cached")
				}
			}
			if f.calls.Load() != 3 {
				t.Fatalf("%d upstream calls, want 3", f.calls.Load())
			}
			if _, ok := f.layer.LastKnownGood(context.Background(), &hub.Call{Name: "weather.current"}); ok {
				t.Fatal("last known good for an uncached call")
			}
		})
	}
}

func TestPersonalKeyedByTenant(t *testing.T) {
	f := newFixture(t, weather10m, nil)
	f.call(t, "weather-a__current", "acme")
	if r := f.call(t, "weather-a__current", "acme"); !r.Provenance.Cached {
		t.Fatal("same tenant: not cached")
	}
	if r := f.call(t, "weather-a__current", "globex"); r.Provenance.Cached {
		t.Fatal("another tenant got acme's personal answer")
	}
}

// TestStaleWhileRevalidateStampede: 1,000 concurrent calls on one expired
// key within the stale window all answer at once from the stale entry, and
// exactly one upstream call refreshes it.
func TestStaleWhileRevalidateStampede(t *testing.T) {
	f := newFixture(t, weather10m, nil)
	f.call(t, "weather-a__current", "acme") // warm: upstream call 1
	f.clk.Advance(10*time.Minute + time.Second)
	f.temp.Store(25)
	f.gate = make(chan struct{}) // the refresh hangs until every caller has its answer
	var wg sync.WaitGroup
	var stale atomic.Int64
	for range 1000 {
		wg.Go(func() {
			r, err := f.gw.Call(context.Background(), &hub.Call{Name: "weather-a__current", Tenant: "acme", Arguments: map[string]any{"city": "Oslo"}})
			if err != nil {
				t.Error(err)
				return
			}
			if r.Provenance.Stale && r.Provenance.Cached && r.Provenance.AgeSeconds == 601 {
				stale.Add(1)
			}
		})
	}
	wg.Wait()
	close(f.gate)
	f.layer.Wait()
	if stale.Load() != 1000 {
		t.Errorf("%d stale answers, want 1000", stale.Load())
	}
	if n := f.calls.Load(); n != 2 {
		t.Fatalf("%d upstream calls, want 2 (warm-up + one refresh)", n)
	}
	r := f.call(t, "weather-a__current", "acme")
	if !r.Provenance.Cached || r.Provenance.Stale || r.Provenance.AgeSeconds != 0 || r.Structured.(map[string]any)["temp_c"] != 25.0 {
		t.Fatalf("after refresh: %+v %v", r.Provenance, r.Structured)
	}
}

// TestMissStampede: 1,000 concurrent calls on a key with no entry make one
// upstream call; the others share its answer.
func TestMissStampede(t *testing.T) {
	f := newFixture(t, weather10m, nil)
	f.gate = make(chan struct{})
	var started, done sync.WaitGroup
	var ok atomic.Int64
	for range 1000 {
		started.Add(1)
		done.Go(func() {
			started.Done()
			r, err := f.gw.Call(context.Background(), &hub.Call{Name: "weather.current", Arguments: map[string]any{"city": "Oslo"}})
			if err == nil && r.Structured.(map[string]any)["temp"] == 20.0 {
				ok.Add(1)
			}
		})
	}
	started.Wait()
	close(f.gate)
	done.Wait()
	if ok.Load() != 1000 || f.calls.Load() != 1 {
		t.Fatalf("%d good answers (want 1000), %d upstream calls (want 1)", ok.Load(), f.calls.Load())
	}
}

func TestLastKnownGood(t *testing.T) {
	f := newFixture(t, weather10m, nil)
	f.call(t, "weather.current", "")
	f.clk.Advance(3 * time.Hour)
	c := &hub.Call{Name: "weather.current", Arguments: map[string]any{"city": "Oslo"}, Capability: catalog(t).Capabilities()[0]}
	r, ok := f.layer.LastKnownGood(context.Background(), c)
	if !ok || !r.Provenance.Stale || r.Provenance.AgeSeconds != 3*3600 || r.Provenance.Capability != "weather.current" {
		t.Fatalf("last known good = %+v, %v", r, ok)
	}
	key, _, _ := f.layer.Key(c)
	if _, ok := f.layer.Stale(context.Background(), key); !ok {
		t.Fatal("Stale(key) missed")
	}
	f.clk.Advance(cache.DefaultKeepStale)
	if _, ok := f.layer.LastKnownGood(context.Background(), c); ok {
		t.Fatal("kept past ttl+keep")
	}
}

func TestErrorsAndStaleAnswersAreNotStored(t *testing.T) {
	f := newFixture(t, weather10m, nil)
	f.fail.Store(true)
	if _, err := f.gw.Call(context.Background(), &hub.Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}); hub.CodeOf(err) != hub.CodeUnavailable {
		t.Fatalf("err = %v", err)
	}
	f.fail.Store(false)
	if r := f.call(t, "weather-a__current", ""); r.Provenance.Cached {
		t.Fatal("an error was cached")
	}
	if n, _ := f.layer.InvalidateTool(context.Background(), "weather-a/current"); n != 1 {
		t.Fatalf("InvalidateTool removed %d, want 1", n)
	}
}
