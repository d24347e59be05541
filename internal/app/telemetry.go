package app

import (
	"context"
	"maps"
	"net/http"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/hub/tracing"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/internal/x/telemetry"
)

// startTelemetry installs OpenTelemetry tracing when the OTEL_* variables
// or the config's telemetry block ask for it (internal/x/telemetry); off, the
// pipeline gets no tracing middleware at all.
func (a *App) startTelemetry(ctx context.Context, cfg *config.Config) error {
	t, err := telemetry.Start(ctx, cfg.Telemetry, telemetry.Options{LookupEnv: a.opts.LookupEnv, Version: a.opts.Version, Logger: a.log, Enable: tracing.Enable})
	if err != nil {
		return err
	}
	a.telemetry = t
	if t.On {
		a.tracer = &tracing.Tracer{BreakerState: func(v string) string {
			if a.Gov == nil {
				return ""
			}
			return a.Gov.BreakerState(v)
		}}
	}
	return nil
}

// stopTelemetry exports the spans still buffered (5 s at most).
func (a *App) stopTelemetry() {
	if a.telemetry == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.telemetry.Shutdown(ctx); err != nil {
		a.log.Warn("telemetry: spans not exported at shutdown", "err", err)
	}
}

// traced returns the gateway's outer middlewares with the call span first
// (so the decision log has the trace id) when tracing is on.
func (a *App) tracedOuter(mw ...hub.Middleware) []hub.Middleware {
	if a.tracer == nil {
		return mw
	}
	return append([]hub.Middleware{a.tracer.Call()}, mw...)
}

// tracedVendor returns the vendor middlewares with a span around the
// governed step (gov, first of mw) and one per try inside it.
func (a *App) tracedVendor(gov hub.Middleware, mw ...hub.Middleware) []hub.Middleware {
	if a.tracer == nil {
		return append([]hub.Middleware{gov}, mw...)
	}
	return append([]hub.Middleware{a.tracer.Vendor(), gov, a.tracer.Attempt()}, mw...)
}

// tracedJob wraps a jobs worker's run in a job span when tracing is on.
func (a *App) tracedJob(run func(context.Context, *hub.Call) (*hub.Result, error)) func(context.Context, *hub.Call) (*hub.Result, error) {
	if a.tracer == nil {
		return run
	}
	return a.tracer.Job(run)
}

// vendorClient is the HTTP client vendors are called with: the outbound
// guard's, sending traceparent headers when tracing is on.
func (a *App) vendorClient() *http.Client {
	c := a.Guard.Client(nil)
	if a.tracer == nil {
		return c
	}
	return tracing.Client(c)
}

// tracedEnqueuer puts the trace context of the call being queued into the
// job's _meta, so the worker's job span continues the caller's trace.
type tracedEnqueuer struct{ fallback.Enqueuer }

func (e tracedEnqueuer) Enqueue(ctx context.Context, c *hub.Call) (string, error) {
	meta := make(map[string]any, len(c.Meta)+2)
	maps.Copy(meta, c.Meta)
	tracing.InjectMeta(ctx, meta)
	qc := *c
	qc.Meta = meta
	return e.Enqueuer.Enqueue(ctx, &qc)
}

// enqueuer is the fallback chains' job queue, traced when tracing is on.
func (a *App) enqueuer(q fallback.Enqueuer) fallback.Enqueuer {
	if a.tracer == nil {
		return q
	}
	return tracedEnqueuer{q}
}
