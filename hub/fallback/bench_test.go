package fallback_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/registry"
)

// BenchmarkFallbackCost compares a capability call served by its primary
// with one whose primary's breaker is open (hub/govern, tripped), so the
// secondary answers: the extra cost of the skip. It reports the p50 of
// each call's wall time.
func BenchmarkFallbackCost(b *testing.B) {
	for _, tc := range []struct {
		name    string
		tripped bool
	}{{"primary", false}, {"primary-breaker-open", true}} {
		b.Run(tc.name, func(b *testing.B) {
			g := govern.New(&govern.Options{
				VendorLimits: func(string) registry.Limits { return registry.Limits{} },
				Logger:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
				Registerer:   prometheus.NewRegistry(),
			})
			if tc.tripped {
				g.Breaker("weather-a").Trip()
			}
			router := fallback.New(&fallback.Options{Config: testConfig})
			gw := hub.NewGateway(catalog(b), newVendors(), &hub.Options{
				Outer:  []hub.Middleware{g.OuterMiddleware()},
				Vendor: []hub.Middleware{g.VendorMiddleware()},
				Route:  router.Route,
			})
			ctx := context.Background()
			args := map[string]any{"city": "Oslo"}
			want := "weather-a"
			if tc.tripped {
				want = "weather-b"
			}
			var lat []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				r, err := gw.Call(ctx, &hub.Call{Tenant: "acme", Name: "weather.queued", Arguments: args})
				lat = append(lat, time.Since(start))
				if err != nil || r.Provenance.Vendor != want {
					b.Fatalf("%+v %v", r, err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
		})
	}
}
