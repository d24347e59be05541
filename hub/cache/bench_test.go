package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/hub/cache/rediscache"
	"github.com/toolhub/toolhub/registry"
)

// BenchmarkHit measures a fresh cache hit through the whole gateway (name
// resolution, argument validation, key, get, decode), serially (latency)
// and in parallel (hits/s).
func BenchmarkHit(b *testing.B) {
	stores := map[string]func(b *testing.B) cache.Cache{
		"memory": func(b *testing.B) cache.Cache { return cache.NewMemory(nil) },
		"redis": func(b *testing.B) cache.Cache {
			c := rediscache.New(redisClient(b), &rediscache.Options{Prefix: uniquePrefix(b)})
			b.Cleanup(func() { _, _ = c.DeletePrefix(context.Background(), "") })
			return c
		},
	}
	stores["uncached"] = stores["memory"]
	for _, name := range []string{"uncached", "memory", "redis"} {
		for _, mode := range []string{"serial", "parallel"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				cfg := cache.Config{Default: cache.Policy{TTL: registry.Duration(time.Hour)}}
				if name == "uncached" { // baseline: the same call, answered by the in-process upstream
					cfg = cache.Config{}
				}
				l := cache.New(&cache.Options{Cache: stores[name](b), Config: cfg})
				gw := hub.NewGateway(catalog(b), upstreams{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
					return answer(21), nil
				}}, &hub.Options{Call: []hub.Middleware{l.Middleware()}})
				args := map[string]any{"city": "Oslo", "units": "metric"}
				ctx := context.Background()
				if _, err := gw.Call(ctx, &hub.Call{Name: "weather.current", Arguments: args}); err != nil {
					b.Fatal(err)
				}
				call := func() {
					r, err := gw.Call(ctx, &hub.Call{Name: "weather.current", Arguments: args})
					if err != nil || r.Provenance.Cached != (name != "uncached") {
						b.Fatalf("not a hit: %v", err)
					}
				}
				b.ReportAllocs()
				start := time.Now()
				if mode == "serial" {
					for b.Loop() {
						call()
					}
				} else {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							call()
						}
					})
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "hits/s")
			})
		}
	}
}

// BenchmarkStore measures the raw stores.
func BenchmarkStore(b *testing.B) {
	val := make([]byte, 512)
	for _, name := range []string{"memory", "redis"} {
		b.Run(name+"/get", func(b *testing.B) {
			var c cache.Cache = cache.NewMemory(nil)
			if name == "redis" {
				r := rediscache.New(redisClient(b), &rediscache.Options{Prefix: uniquePrefix(b)})
				b.Cleanup(func() { _, _ = r.DeletePrefix(context.Background(), "") })
				c = r
			}
			ctx := context.Background()
			_ = c.Set(ctx, "k", val, time.Hour, 0)
			for b.Loop() {
				if _, _, ok, err := c.Get(ctx, "k"); !ok || err != nil {
					b.Fatal("miss", err)
				}
			}
		})
	}
}
