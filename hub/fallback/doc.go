// Package fallback runs capability chains: vendor A → B → last known good
// answer → durable job. [Router.Route] is the gateway's [hub.Options].Route.
//
// For each call the [Router]:
//
//  1. refuses it as unavailable when an operator switched the capability
//     off ([Modes.SwitchOff]);
//  2. parks it for review ([Parker], a job with status needs_review) when
//     the capability is high-risk and Degraded: it never falls back to a
//     weaker vendor;
//  3. orders the chain by its [Policy] (ordered, weighted canary, cheapest)
//     and its degradation [Mode]: Alert sends a share of calls to the
//     secondary first, Degraded skips the primary, Recovering sends a share
//     back to it;
//  4. tries the vendor tools in that order through [hub.RunStep] (hub/govern
//     makes an open breaker answer at once, so a skip costs nothing);
//  5. when all failed: the last known good answer ([Options].Stale, marked
//     Stale with its age), else, for a queueable capability, a job
//     ([Enqueuer]) answered as Queued with its job id, else one
//     unavailable error that lists every vendor's failure.
//
// [Modes] measures each capability's primary (error rate, timeout share,
// mean latency over a sliding window) and moves it Normal → Alert →
// Degraded → Recovering → Normal, each step only after its threshold held
// for a set time, recovery slower than degradation. Operators pin modes and
// switch capabilities off at run time; [Modes.Handler] serves
// GET /v1/capabilities and the toolhub_capability_mode gauge exports it.
//
// # Usage
//
//	modes := fallback.NewModes(&fallback.ModesOptions{Config: cfg.Fallback, Registerer: reg, Capabilities: capNames})
//	router := fallback.New(&fallback.Options{
//		Config:   cfg.Fallback,
//		Modes:    modes,
//		Stale:    layer.LastKnownGood, // hub/cache
//		Enqueuer: jobsQueue,           // hub/jobs
//		Parker:   jobsQueue,
//	})
//	gw := hub.NewGateway(cat, ups, &hub.Options{Call: []hub.Middleware{layer.Middleware()}, Route: router.Route})
//	mux.Handle("GET /v1/capabilities", modes.Handler())
//	mux.Handle("POST /v1/admin/capabilities/{name}/mode", admin(modes.AdminHandler()))
package fallback
