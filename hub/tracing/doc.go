// Package tracing puts toolhub's calls into OpenTelemetry traces: a span per
// call ([Tracer.Call]), per governed vendor step ([Tracer.Vendor]: breaker,
// rate limits and retries at one vendor tool) and per try at the vendor
// ([Tracer.Attempt]), and the propagation of W3C trace context to vendors
// ([Transport] for HTTP headers, [InjectMeta] for MCP's _meta).
//
// It uses the global OpenTelemetry API (otel.GetTracerProvider and
// otel.GetTextMapPropagator): with nothing configured both are no-ops and a
// span costs one allocation-free Start. internal/x/telemetry installs the SDK
// when OTEL_* variables or the config's telemetry block ask for it.
//
//	gw := hub.NewGateway(cat, ups, &hub.Options{
//		Outer:  []hub.Middleware{tr.Call(), …},
//		Vendor: []hub.Middleware{tr.Vendor(), gov.VendorMiddleware(), tr.Attempt(), …},
//	})
package tracing
