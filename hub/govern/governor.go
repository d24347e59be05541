package govern

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhub/toolhub/hub/breaker"
	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/hub/retry"
	"github.com/toolhub/toolhub/registry"
)

// ErrRefused is matched (errors.Is) by the cause of every refusal toolhub
// decides on its own — a rate limit, a full bulkhead, an open breaker, a
// recovery ramp or an ejection — as opposed to an error of the vendor.
// Such refusals never count against a vendor's breaker and are never retried.
var ErrRefused = errors.New("govern: refused by toolhub")

// DefaultBulkheadWait is how long a call waits for a free concurrency slot
// before failing with overloaded, when [Options.BulkheadWait] is zero.
const DefaultBulkheadWait = 50 * time.Millisecond

// Options configure a [Governor]. A nil *Options, and every zero field,
// means the default.
type Options struct {
	// Limiter holds the rate-limit buckets. Nil means an in-process
	// [limit.NewLocal] on Now. Pass a [limit.Fallback] over a redislimit.Limiter
	// to share limits between instances.
	Limiter limit.Limiter
	// VendorLimits returns a vendor's limits (rate, burst, concurrency);
	// it is asked on every attempt, so a config reload takes effect at once.
	// Nil, and zero fields, mean unlimited. A zero Burst with a positive RPS
	// means max(1, ⌈RPS⌉).
	VendorLimits func(vendor string) registry.Limits
	// TenantRule returns the rate limit of one tenant at one vendor (key
	// "tv:"+tenant+"/"+vendor); false means none. Nil means no tenant limits.
	TenantRule func(tenant string) (limit.Rule, bool)
	// Headroom and BatchShare configure the priority classes on every
	// bucket (see [limit.Priority]); zero means limit's defaults (30%, 40%).
	Headroom, BatchShare float64
	// Retry is the retry policy template. Its zero fields mean retry's
	// defaults (Max 3, Base 1s, Cap 30s, full jitter); Idempotent and
	// Classify are set per call (see [Options.Idempotent], [Classify]), and
	// OnRetry is chained after the governor's own. Tests inject Sleep and Rand.
	Retry retry.Policy
	// AttemptTimeout returns how long one attempt at a tool may take (the
	// gateway's attempt timeout), so that a retry starts only when it can
	// finish before the call's deadline. Nil means retries only check that
	// they start before it.
	AttemptTimeout func(t *registry.Tool) time.Duration
	// Idempotent says whether a tool may be retried after a transient
	// failure. Nil means: its MCP annotations say idempotentHint or
	// readOnlyHint is true. A tool that is not idempotent is retried only
	// when the request provably never left (connection refused).
	Idempotent func(t *registry.Tool) bool
	// Breaker returns the options of a vendor's breaker (key: the vendor
	// id) when it is first used. Nil, or a nil result, means breaker's
	// defaults. Now defaults to [Options.Now]; OnStateChange is chained
	// after the governor's own (metrics, log).
	Breaker func(key string) *breaker.Options
	// ToolBreaker says which vendor tools get a breaker of their own
	// (keyed "vendor/tool"), checked after the vendor's; nil means none.
	// A tool that fails alone then stops without taking its vendor's other
	// tools down with it.
	ToolBreaker func(t *registry.Tool) bool
	// JobTrialEvery is how often a queued job's call (one with
	// Meta[hub.MetaJobID]) may go through its vendor's open breaker, or past
	// an ejection by probes, as the trial that finds the vendor's recovery:
	// jobs can wait, and the call they make is a better probe than a ping.
	// Zero means [DefaultJobTrialEvery] (1s); negative, never.
	JobTrialEvery time.Duration
	// JobPingEvery is how often a vendor whose probe is a ping
	// ([Governor.StartPingProbes]) is also pinged while its breaker is open
	// (or it is ejected) and a queued job waits for it: a good ping lets
	// the breaker's trial calls through at once ([breaker.RunPings]). Zero
	// means [DefaultJobPingEvery] (250ms); negative, never.
	JobPingEvery time.Duration
	// Health configures the trackers made by [Governor.StartProbes]. Nil
	// means breaker's defaults (eject after 3 failed probes). Now defaults
	// to [Options.Now]; OnChange is chained after the governor's own.
	Health *breaker.HealthOptions
	// BulkheadWait bounds the wait for a concurrency slot. Zero means
	// [DefaultBulkheadWait]; negative means no wait.
	BulkheadWait time.Duration
	// Logger receives the decision log (one line per call) and breaker and
	// health changes. Nil means JSON to os.Stderr.
	Logger *slog.Logger
	// LogQueue is how many decision-log lines may wait for the governor's
	// writer goroutine, which hands them to Logger's handler off the call
	// path (a call copies its line into the queue; the writer takes the
	// queue every millisecond while calls come, and stops when none do).
	// A call that finds the queue full hands its own line to the handler
	// and counts in toolhub_decision_log_inline_total. [Governor.Flush]
	// and [Governor.Close] hand over what waits. Zero means no queue: each
	// call hands its line to the handler before it returns, so a line is
	// in the log once its call returned. [DefaultLogQueue] suits a server.
	// Other lines (breaker and health changes) are logged at once, so they
	// may come before the queued lines of calls that ended earlier.
	LogQueue int
	// Registerer receives the metrics. Nil means a private registry, served
	// by [Governor.MetricsHandler]. A Registerer that is also a
	// [prometheus.Gatherer] (like *prometheus.Registry) is served by
	// MetricsHandler; otherwise MetricsHandler serves prometheus.DefaultGatherer.
	Registerer prometheus.Registerer
	// Now is the clock for breakers, ramps, health and latencies. Nil means time.Now.
	Now func() time.Time
}

// Governor governs the calls to vendors: active and passive health,
// breakers and recovery ramps, rate limits, bulkheads and retries (see
// [Governor.VendorMiddleware]), and the decision log and metrics of every
// call (see [Governor.OuterMiddleware]). Safe for concurrent use.
type Governor struct {
	o        Options
	log      *slog.Logger
	now      func() time.Time
	prio     limit.Priority
	breakers *breaker.Set
	m        *metrics
	gatherer prometheus.Gatherer

	vendors sync.Map // vendor id → *vendorState
	idem    sync.Map // *registry.Tool → bool
	nidem   atomic.Int64
	debug   sync.Map // tenant → struct{}
	ndebug  atomic.Int32

	probesMu sync.Mutex
	probes   map[string]*probeRun

	q *logQueue // nil: lines are logged on the call path
}

// vendorState is what the governor keeps per vendor.
type vendorState struct {
	id         string
	breaker    *breaker.Breaker
	state      atomic.Int32 // breaker.State, mirrored by OnStateChange
	health     atomic.Pointer[breaker.Health]
	inflight   atomic.Int64
	rejections atomic.Int64 // rate-limit and bulkhead refusals
	jobWaitAt  atomic.Int64 // unix ns: a queued job's call last found the vendor down

	lastProbeMu sync.Mutex
	lastProbe   *ProbeStatus

	inflightG prometheus.Gauge
	retries   prometheus.Counter

	// Made once, so that calls do not build them again.
	bulk       atomic.Pointer[limit.Bulkhead] // the concurrency bulkhead at the current limit
	rateKey    string                         // "v:"+id, the vendor's rate-limit key
	rateOK     string                         // the decision "rate v:<id> allowed"
	breakerMsg [3]string                      // the decision "breaker <id> <state>", by breaker.State
	tenants    sync.Map                       // tenant → *tenantKeys
	ntenants   atomic.Int64
}

// tenantKeys are a tenant's rate-limit key at a vendor and its decision.
type tenantKeys struct{ key, ok string }

// tenant returns the tenant's rate-limit key at the vendor
// ("tv:"+tenant+"/"+vendor) and its "allowed" decision.
func (vs *vendorState) tenant(tenant string) *tenantKeys {
	if k, ok := vs.tenants.Load(tenant); ok {
		return k.(*tenantKeys)
	}
	key := "tv:" + tenant + "/" + vs.id
	k := &tenantKeys{key: key, ok: "rate " + key + " allowed"}
	if vs.ntenants.Add(1) > 1<<14 { // tenants are few; bound it anyway
		vs.tenants.Clear()
		vs.ntenants.Store(0)
	}
	vs.tenants.Store(tenant, k)
	return k
}

// breakerDecision is the decision noted when the breaker lets a call through.
func (vs *vendorState) breakerDecision(s breaker.State) string {
	if int(s) < len(vs.breakerMsg) {
		return vs.breakerMsg[s]
	}
	return "breaker " + vs.id + " " + s.String()
}

// New returns a Governor. It panics if the metrics cannot be registered
// (a programmer error: a conflicting collector of the same name).
func New(opts *Options) *Governor {
	g := &Governor{probes: map[string]*probeRun{}}
	if opts != nil {
		g.o = *opts
	}
	g.now = g.o.Now
	if g.now == nil {
		g.now = time.Now
	}
	g.log = g.o.Logger
	if g.log == nil {
		g.log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if g.o.Limiter == nil {
		g.o.Limiter = limit.NewLocal(&limit.LocalOptions{Now: g.o.Now}) // nil: the wall clock, read cheaper
	}
	if g.o.BulkheadWait == 0 {
		g.o.BulkheadWait = DefaultBulkheadWait
	}
	g.prio = limit.Priority{Limiter: g.o.Limiter, Headroom: g.o.Headroom, BatchShare: g.o.BatchShare}
	reg := g.o.Registerer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg, g.gatherer = r, r
	} else if ga, ok := reg.(prometheus.Gatherer); ok {
		g.gatherer = ga
	} else {
		g.gatherer = prometheus.DefaultGatherer
	}
	g.m = newMetrics(reg)
	if g.o.LogQueue > 0 {
		g.q = newLogQueue(g.log.Handler(), g.o.LogQueue)
	}
	g.breakers = breaker.NewSet(g.breakerOptions)
	return g
}

func (g *Governor) breakerOptions(key string) *breaker.Options {
	var o breaker.Options
	if g.o.Breaker != nil {
		if p := g.o.Breaker(key); p != nil {
			o = *p
		}
	}
	if o.Now == nil {
		o.Now = g.now
	}
	user := o.OnStateChange
	o.OnStateChange = func(c breaker.Change) {
		g.breakerChanged(c)
		if user != nil {
			user(c)
		}
	}
	return &o
}

func (g *Governor) breakerChanged(c breaker.Change) {
	if v, ok := g.vendors.Load(c.Key); ok {
		v.(*vendorState).state.Store(int32(c.To))
	}
	g.m.breakerState.WithLabelValues(c.Key).Set(stateValue(c.To))
	g.log.LogAttrs(context.Background(), slog.LevelWarn, "breaker state change",
		slog.String("vendor", c.Key), slog.String("from", c.From.String()), slog.String("to", c.To.String()),
		slog.Duration("cool_down", c.CoolDown), slog.Int("trips", c.Trips))
}

// stateValue maps a breaker state to the toolhub_breaker_state gauge:
// 0 closed, 1 half-open, 2 open.
func stateValue(s breaker.State) float64 {
	switch s {
	case breaker.HalfOpen:
		return 1
	case breaker.Open:
		return 2
	}
	return 0
}

// state returns the vendor's state, creating it on first use.
func (g *Governor) state(vendor string) *vendorState {
	if v, ok := g.vendors.Load(vendor); ok {
		return v.(*vendorState)
	}
	b := g.breakers.Get(vendor) // the Set returns one breaker per key
	vs := &vendorState{
		id:        vendor,
		breaker:   b,
		inflightG: g.m.inflight.WithLabelValues(vendor),
		retries:   g.m.retries.WithLabelValues(vendor),
		rateKey:   "v:" + vendor,
	}
	vs.rateOK = "rate " + vs.rateKey + " allowed"
	for s := range vs.breakerMsg {
		vs.breakerMsg[s] = "breaker " + vendor + " " + breaker.State(s).String()
	}
	v, loaded := g.vendors.LoadOrStore(vendor, vs)
	if !loaded {
		s := b.State()
		vs.state.Store(int32(s))
		g.m.breakerState.WithLabelValues(vendor).Set(stateValue(s))
	}
	return v.(*vendorState)
}

// Flush hands the decision-log lines waiting in the queue
// ([Options.LogQueue]) to the logger's handler, and returns once it has:
// every call that returned before Flush was called is then in the log.
func (g *Governor) Flush() {
	if g.q != nil {
		g.q.flush()
	}
}

// Close hands the decision-log lines still queued ([Options.LogQueue]) to
// the logger's handler; calls after it log their own lines. It stops no
// probe ([Governor.StopProbes]) and always returns nil.
func (g *Governor) Close() error {
	if g.q != nil {
		g.q.close()
	}
	return nil
}

// Breaker returns the vendor's circuit breaker, for operator switches
// (Trip, Reset) from the admin API.
func (g *Governor) Breaker(vendor string) *breaker.Breaker { return g.state(vendor).breaker }

// limits returns the vendor's limits, or zero (unlimited).
func (g *Governor) limits(vendor string) registry.Limits {
	if g.o.VendorLimits == nil {
		return registry.Limits{}
	}
	return g.o.VendorLimits(vendor)
}

// vendorRule turns a vendor's limits into a rate rule; ok is false for unlimited.
func vendorRule(l registry.Limits) (limit.Rule, bool) {
	if !(l.RPS > 0) || math.IsInf(l.RPS, 0) {
		return limit.Rule{}, false
	}
	burst := l.Burst
	if burst <= 0 {
		burst = max(1, int(math.Ceil(l.RPS)))
	}
	return limit.Rule{Rate: l.RPS, Burst: burst}, true
}

// idempotent reports whether t may be retried after a transient failure.
func (g *Governor) idempotent(t *registry.Tool) bool {
	if g.o.Idempotent != nil {
		return g.o.Idempotent(t)
	}
	// Tools are immutable and replaced on re-sync, so the answer is cached
	// per *Tool; the cache is dropped when it grows past many re-syncs.
	if v, ok := g.idem.Load(t); ok {
		return v.(bool)
	}
	ok := Idempotent(t)
	if g.nidem.Add(1) > 1<<16 {
		g.idem.Clear()
		g.nidem.Store(0)
	}
	g.idem.Store(t, ok)
	return ok
}

// Idempotent is the default of [Options.Idempotent]: the tool's MCP
// annotations say idempotentHint or readOnlyHint is true.
func Idempotent(t *registry.Tool) bool {
	if t == nil || len(t.Def.Annotations) == 0 {
		return false
	}
	var a struct {
		Idempotent *bool `json:"idempotentHint"`
		ReadOnly   *bool `json:"readOnlyHint"`
	}
	if json.Unmarshal(t.Def.Annotations, &a) != nil {
		return false
	}
	return (a.Idempotent != nil && *a.Idempotent) || (a.ReadOnly != nil && *a.ReadOnly)
}

// SetDebug turns argument logging on or off for one tenant's calls in the
// decision log. Off for every tenant by default.
func (g *Governor) SetDebug(tenant string, on bool) {
	if on {
		if _, loaded := g.debug.LoadOrStore(tenant, struct{}{}); !loaded {
			g.ndebug.Add(1)
		}
		return
	}
	if _, loaded := g.debug.LoadAndDelete(tenant); loaded {
		g.ndebug.Add(-1)
	}
}

func (g *Governor) debugOn(tenant string) bool {
	if g.ndebug.Load() == 0 {
		return false
	}
	_, ok := g.debug.Load(tenant)
	return ok
}
