// Package ui serves toolhub's web dashboard: one page of plain HTML, CSS
// and JavaScript embedded in the binary (no build step, no CDN), which
// reads toolhub's own JSON APIs from the same origin every two seconds:
//
//   - GET /v1/vendors: connection state, breaker, ramp, ejection, probes,
//     in-flight calls and the last error of every vendor;
//   - GET /v1/capabilities: each capability's degradation mode;
//   - GET /v1/reports/usage: usage and money per tenant, vendor and day;
//   - GET {prefix}/api/decisions: the latest decision-log lines, kept by a
//     [Recorder] and served by this package.
//
// The page keeps an API key in the browser's localStorage and sends it as
// Authorization: Bearer. The static files hold no data and can be public
// ([Public]); the data APIs keep their own authorization.
//
// Usage:
//
//	rec := ui.NewRecorder(logger.Handler(), 0) // keeps the last 200 "call" lines
//	logger = slog.New(rec)                     // give this logger to govern
//	h := ui.Handler(&ui.Options{Recorder: rec})
//	mux.Handle("GET /ui/api/", requireOperator(h))
//	mux.Handle("/ui/", h)
package ui
