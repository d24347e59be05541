// Package hub is the call pipeline every tool call goes through.
//
// A [Call] names a catalog entry (a vendor tool "vendor__tool" or a
// capability "image.generate"). The [Gateway] resolves it, validates the
// arguments against the input schema, runs it through the middlewares and
// the vendor's [Invoker], checks the output against the output schema, and
// returns a [Result] whose [Provenance] says where the answer came from.
// Every failure is an [*Error] with a stable [Code].
//
//	gw := hub.NewGateway(catalog, upstreams, &hub.Options{
//		Outer:  []hub.Middleware{decisionLog},         // every call
//		Call:   []hub.Middleware{budget, cache},       // resolved calls
//		Vendor: []hub.Middleware{breaker, limit, retry}, // each vendor attempt
//	})
//	res, err := gw.Call(ctx, &hub.Call{Tenant: "acme", Name: "weather-a__current_weather",
//		Arguments: map[string]any{"city": "Paris"}})
//
// Middlewares follow net/http: a [Middleware] wraps an [Invoker], and
// [Chain] applies them outermost first. The pipeline is assembled once in
// [NewGateway]; a call allocates only its own state.
package hub
