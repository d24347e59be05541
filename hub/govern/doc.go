// Package govern wires the hub's protection primitives — [limit], [breaker]
// and [retry] — into the call pipeline as two [hub.Middleware]s, and writes
// the decision log and the Prometheus metrics of every call.
//
// A [Governor] owns, per vendor: a circuit breaker and its recovery ramp,
// an optional active-health tracker ([Governor.StartProbes]), rate-limit
// buckets (vendor, and tenant × vendor) and a concurrency bulkhead.
//
//   - [Governor.VendorMiddleware] runs around each attempt at one vendor
//     tool: health → ramp → breaker → retries of [rate limits → bulkhead →
//     upstream]. An ejected, recovering or open vendor fails fast, so a
//     capability chain moves on to its next vendor at once; toolhub's own
//     refusals match [ErrRefused] and never count against a vendor.
//   - [Governor.OuterMiddleware] runs around the whole call and writes one
//     JSON decision-log line (attempts, decisions, outcome, latency, time
//     spent deciding) and the call metrics. The outcome is [hub.OutcomeOf]'s,
//     the one classifier billing and traces read too. It never logs argument values
//     unless [Governor.SetDebug] is on for the tenant. With [Options.LogQueue],
//     lines are encoded and written by the governor's own goroutine, off the
//     call path; [Governor.Flush] and [Governor.Close] hand over what waits.
//   - [Governor.Status] reports a vendor's breaker, ramp, health, limits and
//     load for the status API; [Governor.MetricsHandler] serves /metrics.
//
// # Usage
//
//	g := govern.New(&govern.Options{
//		VendorLimits: func(id string) registry.Limits { return vendorsByID[id].Limits },
//		Logger:       decisionLog, // JSON
//		LogQueue:     govern.DefaultLogQueue,
//	})
//	defer g.Close() // the decision-log lines still queued
//	gw := hub.NewGateway(cat, ups, &hub.Options{
//		Outer:  []hub.Middleware{g.OuterMiddleware()},
//		Vendor: []hub.Middleware{g.VendorMiddleware()},
//	})
//	g.StartProbes(ctx, "weather-a", 10*time.Second, func(ctx context.Context) error {
//		_, err := gw.Call(ctx, &hub.Call{Tenant: "_probe", Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}})
//		return err
//	})
//	mux.Handle("GET /metrics", g.MetricsHandler())
//
// Deploy the alert rules in deploy/alerts.yml next to the metrics.
package govern
