package govern

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcome label values of toolhub_calls_total besides the error codes.
const (
	OutcomeOK       = "ok"       // the first vendor tried answered
	OutcomeFallback = "fallback" // a later vendor of the chain answered
	OutcomeCached   = "cached"   // a fresh cache hit
	OutcomeStale    = "stale"    // last known good answer, may not be the latest
	OutcomeQueued   = "queued"   // accepted as an async job
)

type metrics struct {
	calls        *prometheus.CounterVec   // tool, vendor, outcome
	duration     *prometheus.HistogramVec // vendor
	attempts     *prometheus.CounterVec   // vendor, outcome
	breakerState *prometheus.GaugeVec     // vendor
	rejections   *prometheus.CounterVec   // scope
	retries      *prometheus.CounterVec   // vendor
	inflight     *prometheus.GaugeVec     // vendor
	probes       *prometheus.CounterVec   // vendor, result
}

// Scopes of toolhub_limiter_rejections_total.
const (
	scopeVendor       = "vendor"        // the vendor's rate limit
	scopeTenantVendor = "tenant_vendor" // a tenant's rate limit at a vendor
	scopeBulkhead     = "bulkhead"      // the vendor's concurrency limit
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhub_calls_total",
			Help: "Calls through the gateway, by tool asked, vendor that answered (or last tried) and outcome (ok, fallback, cached, stale, queued, or an error code).",
		}, []string{"tool", "vendor", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolhub_call_duration_seconds",
			Help:    "End-to-end latency of calls in toolhub, by vendor.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"vendor"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhub_vendor_attempts_total",
			Help: "Upstream attempts at vendor tools, by vendor and outcome (ok or an error code).",
		}, []string{"vendor", "outcome"}),
		breakerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "toolhub_breaker_state",
			Help: "Circuit breaker state per vendor: 0 closed, 1 half-open, 2 open.",
		}, []string{"vendor"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhub_limiter_rejections_total",
			Help: "Calls refused by toolhub's own limits, by scope (vendor, tenant_vendor, bulkhead).",
		}, []string{"scope"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhub_retries_total",
			Help: "Retries of failed upstream attempts, by vendor.",
		}, []string{"vendor"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "toolhub_inflight",
			Help: "Upstream calls in flight, by vendor.",
		}, []string{"vendor"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhub_probe_results_total",
			Help: "Active health probe results, by vendor and result (ok, fail).",
		}, []string{"vendor", "result"}),
	}
	m.calls = register(reg, m.calls)
	m.duration = register(reg, m.duration)
	m.attempts = register(reg, m.attempts)
	m.breakerState = register(reg, m.breakerState)
	m.rejections = register(reg, m.rejections)
	m.retries = register(reg, m.retries)
	m.inflight = register(reg, m.inflight)
	m.probes = register(reg, m.probes)
	return m
}

// register registers c, or returns the identical collector already
// registered (several governors on one registry share their metrics).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(fmt.Sprintf("govern: registering metrics: %v", err))
	}
	return c
}

// MetricsHandler serves the governor's metrics in the Prometheus format
// (mount it at GET /metrics).
func (g *Governor) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(g.gatherer, promhttp.HandlerOpts{})
}
