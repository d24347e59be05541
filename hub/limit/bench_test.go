package limit

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/redistest"
)

// BenchmarkLocalAllow measures a decision on the in-process limiter, from all
// Ps at once, over 1024 keys (a realistic tenant × vendor spread).
func BenchmarkLocalAllow(b *testing.B) {
	l := NewLocal(nil)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "tenant-" + strconv.Itoa(i) + "/vendor"
	}
	rule := Rule{Rate: 1e6, Burst: 1000}
	ctx := context.Background()
	var seq atomic.Uint32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seq.Add(1)) * 7919
		for pb.Next() {
			i++
			if _, err := l.Allow(ctx, keys[i%len(keys)], rule, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRedisAllow measures one decision's latency on the shared limiter
// (one round trip to a local Redis), reporting the median and 99th percentile.
func BenchmarkRedisAllow(b *testing.B) {
	c := redistest.Client(b)
	l := NewRedis(c, &RedisOptions{Prefix: redistest.Prefix(b, c)})
	rule := Rule{Rate: 1e6, Burst: 1000}
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
