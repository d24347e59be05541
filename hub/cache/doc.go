// Package cache is the hub's result cache: a [Cache] store (in-process
// [Memory] LRU with a byte budget, or shared in Redis: hub/cache/rediscache) behind a [Layer] that
// sits in the gateway's Call tier.
//
// A call is cached by its tool or capability, the canonical JSON of its
// arguments (sorted keys, normalized numbers; see [Key]) and, for personal
// tools, its tenant. The [Policy] of each tool says how long a result is
// fresh (TTL), how long past that it may be answered at once while one
// background call refreshes it (stale-while-revalidate), and how long it is
// kept as the last known good answer for the fallback chain. Calls at data
// level L2 or above ([Options].DataLevel) are never cached; tool errors,
// stale and queued answers are never stored.
//
// Concurrent misses of one key make one upstream call; the others wait for
// it and share its answer. A stale hit starts at most one background
// refresh per key, so a thousand callers of a hot expired key cost one
// vendor call.
//
// # Usage
//
//	layer := cache.New(&cache.Options{
//		Cache:     rediscache.New(rdb, &rediscache.Options{Prefix: "toolhub:cache:"}), // or nil: in-process
//		Config:    cfg.Cache, // tools: {weather.current: {ttl: 10m, stale_while_revalidate: 1m}}
//		DataLevel: privacy.Level,
//	})
//	router := fallback.New(&fallback.Options{Stale: layer.LastKnownGood, …})
//	gw := hub.NewGateway(cat, ups, &hub.Options{
//		Call:  []hub.Middleware{layer.Middleware()},
//		Route: router.Route,
//	})
//	n, err := layer.InvalidateTool(ctx, "weather.current") // admin API
package cache
