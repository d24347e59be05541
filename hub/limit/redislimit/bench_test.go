package redislimit

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

// BenchmarkRedisAllow measures one decision's latency on the shared limiter
// (one round trip to a local Redis), reporting the median and 99th percentile.
func BenchmarkRedisAllow(b *testing.B) {
	c := redistest.Client(b)
	l := New(c, &Options{Prefix: redistest.Prefix(b, c)})
	rule := limit.Rule{Rate: 1e6, Burst: 1000}
	ctx := context.Background()
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := l.Allow(ctx, "k"+strconv.Itoa(i%64), rule, 1); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
}
