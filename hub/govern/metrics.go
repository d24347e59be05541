package govern

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolhub/toolhub/hub"
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
	logInline    prometheus.Counter       // lines a full log queue left to their call

	// The series every call touches, resolved once per label set:
	// WithLabelValues checks and hashes its labels on every use.
	callSeries    seriesCache[callLabels, prometheus.Counter]
	attemptSeries seriesCache[attemptLabels, prometheus.Counter]
	latencySeries seriesCache[string, prometheus.Observer]
	rejectSeries  seriesCache[string, prometheus.Counter]
}

type callLabels struct {
	tool, vendor string
	outcome      hub.Outcome
}

type attemptLabels struct {
	vendor  string
	outcome hub.Outcome
}

// maxCachedSeries bounds each series cache: label sets past it are looked
// up in their vector on each use (still counted, just slower).
const maxCachedSeries = 1 << 14

// seriesCache maps a label set to its resolved series. Safe for
// concurrent use; the zero value is ready.
type seriesCache[K comparable, S any] struct {
	mu sync.RWMutex
	m  map[K]S
}

func (c *seriesCache[K, S]) get(k K, resolve func(K) S) S {
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = resolve(k)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[K]S)
	}
	if len(c.m) < maxCachedSeries {
		c.m[k] = s
	}
	c.mu.Unlock()
	return s
}

// call returns the toolhub_calls_total series of one label set.
func (m *metrics) call(tool, vendor string, o hub.Outcome) prometheus.Counter {
	return m.callSeries.get(callLabels{tool, vendor, o}, m.resolveCall)
}

func (m *metrics) resolveCall(k callLabels) prometheus.Counter {
	return m.calls.WithLabelValues(k.tool, k.vendor, string(k.outcome))
}

// attempt returns the toolhub_vendor_attempts_total series of one label set.
func (m *metrics) attempt(vendor string, o hub.Outcome) prometheus.Counter {
	return m.attemptSeries.get(attemptLabels{vendor, o}, m.resolveAttempt)
}

func (m *metrics) resolveAttempt(k attemptLabels) prometheus.Counter {
	return m.attempts.WithLabelValues(k.vendor, string(k.outcome))
}

// latency returns the toolhub_call_duration_seconds series of a vendor.
func (m *metrics) latency(vendor string) prometheus.Observer {
	return m.latencySeries.get(vendor, m.resolveLatency)
}

func (m *metrics) resolveLatency(vendor string) prometheus.Observer {
	return m.duration.WithLabelValues(vendor)
}

// rejection returns the toolhub_limiter_rejections_total series of a scope.
func (m *metrics) rejection(scope string) prometheus.Counter {
	return m.rejectSeries.get(scope, m.resolveRejection)
}

func (m *metrics) resolveRejection(scope string) prometheus.Counter {
	return m.rejections.WithLabelValues(scope)
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
			Help: "Calls through the gateway, by tool asked, vendor that answered (or last tried) and outcome (ok, fallback, cached, stale, queued, tool_error, or an error code: hub.Outcome).",
		}, []string{"tool", "vendor", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolhub_call_duration_seconds",
			Help:    "End-to-end latency of calls in toolhub, by vendor.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"vendor"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolhub_vendor_attempts_total",
			Help: "Upstream attempts at vendor tools, by vendor and outcome (ok, tool_error or an error code: hub.Outcome).",
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
		logInline: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolhub_decision_log_inline_total",
			Help: "Decision-log lines a call encoded and wrote itself because the governor's log queue was full (its writer falls behind the calls).",
		}),
	}
	m.calls = register(reg, m.calls)
	m.duration = register(reg, m.duration)
	m.attempts = register(reg, m.attempts)
	m.breakerState = register(reg, m.breakerState)
	m.rejections = register(reg, m.rejections)
	m.retries = register(reg, m.retries)
	m.inflight = register(reg, m.inflight)
	m.probes = register(reg, m.probes)
	m.logInline = register(reg, m.logInline)
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
