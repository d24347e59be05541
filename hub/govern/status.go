package govern

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/breaker"
)

type probeRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartProbes probes vendor every interval with probe (a cheap, real tool
// call; nil error means healthy), in a goroutine of its own, until ctx is
// done or [Governor.StopProbes]. After [Options.Health]'s threshold of
// failures in a row (3 by default) the vendor is ejected: its calls fail
// fast with unavailable. The next successful probe re-admits it, starts
// its recovery ramp (5% → 25% → 50% → 100%) and turns its open breaker
// half-open at once ([breaker.Breaker.TrialNow]). Starting probes for a vendor
// already probed replaces the old probes.
func (g *Governor) StartProbes(ctx context.Context, vendor string, interval time.Duration, probe func(ctx context.Context) error) {
	g.startProbes(ctx, vendor, interval, probe, false)
}

// StartPingProbes is [Governor.StartProbes] for a vendor whose probe is a
// protocol-level ping (an MCP ping, an A2A agent card fetch; no business
// probe is configured): while its breaker is open, or it is ejected, and a
// queued job waits for it (a job's call found it down within the last
// [JobWaitWindow]), it is also pinged every [Options.JobPingEvery]. A good
// ping counts as a good probe: it re-admits the vendor and turns its
// breaker half-open, whose trial calls then decide; a failed one is not
// recorded ([breaker.RunPings]).
func (g *Governor) StartPingProbes(ctx context.Context, vendor string, interval time.Duration, ping func(ctx context.Context) error) {
	g.startProbes(ctx, vendor, interval, ping, true)
}

// JobWaitWindow is how long after a queued job's call found its vendor
// down the vendor counts as waited for (by [Governor.StartPingProbes]):
// a waiting job looks again within 2s (jobs.DefaultMaxWait).
const JobWaitWindow = 5 * time.Second

// DefaultJobPingEvery is the default of [Options.JobPingEvery].
const DefaultJobPingEvery = 250 * time.Millisecond

func (g *Governor) startProbes(ctx context.Context, vendor string, interval time.Duration, probe func(ctx context.Context) error, ping bool) {
	g.StopProbes(vendor)
	vs := g.state(vendor)
	var o breaker.HealthOptions
	if g.o.Health != nil {
		o = *g.o.Health
	}
	if o.Now == nil {
		o.Now = g.now
	}
	user := o.OnChange
	o.OnChange = func(c breaker.HealthChange) {
		attrs := []slog.Attr{slog.String("vendor", c.Key), slog.Bool("ejected", c.Ejected), slog.Bool("manual", c.Manual)}
		if c.Err != nil {
			attrs = append(attrs, slog.String("error", c.Err.Error()))
		}
		g.log.LogAttrs(context.Background(), slog.LevelWarn, "vendor health change", attrs...)
		if !c.Ejected {
			// The vendor is back: its open breaker need not sit out the
			// rest of its cool-down; its trial calls decide.
			vs.breaker.TrialNow()
		}
		if user != nil {
			user(c)
		}
	}
	h := breaker.NewHealth(vendor, &o)
	vs.health.Store(h)

	okC := g.m.probes.WithLabelValues(vendor, "ok")
	failC := g.m.probes.WithLabelValues(vendor, "fail")
	pctx, cancel := context.WithCancel(ctx)
	p := breaker.ProberFunc(func(ctx context.Context) error {
		err := probe(ctx)
		if hub.IsHubState(err) {
			// The hub's own connection is being made or remade: no verdict.
			return fmt.Errorf("%w: %w", breaker.ErrNoVerdict, err)
		}
		if pctx.Err() == nil { // not stopping: the result says something of the vendor
			ps := &ProbeStatus{At: g.now(), OK: err == nil}
			if err != nil {
				ps.Error = err.Error()
				failC.Inc()
			} else {
				okC.Inc()
			}
			vs.lastProbeMu.Lock()
			vs.lastProbe = ps
			vs.lastProbeMu.Unlock()
		}
		return err
	})
	run := &probeRun{cancel: cancel, done: make(chan struct{})}
	g.probesMu.Lock()
	g.probes[vendor] = run
	g.probesMu.Unlock()
	every := g.o.JobPingEvery
	if every == 0 {
		every = DefaultJobPingEvery
	}
	if !ping || every < 0 {
		go func() {
			defer close(run.done)
			breaker.RunProbes(pctx, interval, p, h)
		}()
		return
	}
	waited := func() bool {
		at := vs.jobWaitAt.Load()
		return at != 0 && g.now().Sub(time.Unix(0, at)) < JobWaitWindow
	}
	var wg sync.WaitGroup
	wg.Go(func() { breaker.RunProbes(pctx, interval, p, h) })
	wg.Go(func() { breaker.RunPings(pctx, every, breaker.ProberFunc(probe), vs.breaker, h, waited) })
	go func() {
		defer close(run.done)
		wg.Wait()
	}()
}

// StopProbes stops the vendor's probes, waits for the probe goroutine to
// end, and forgets the vendor's health: an ejected vendor takes calls
// again (its breaker still guards it).
func (g *Governor) StopProbes(vendor string) {
	g.probesMu.Lock()
	run := g.probes[vendor]
	delete(g.probes, vendor)
	g.probesMu.Unlock()
	if run == nil {
		return
	}
	run.cancel()
	<-run.done
	if v, ok := g.vendors.Load(vendor); ok {
		v.(*vendorState).health.Store(nil)
	}
}

// Health returns the vendor's active-health tracker, for operator switches
// (Eject, Readmit), or nil when it is not probed.
func (g *Governor) Health(vendor string) *breaker.Health {
	return g.state(vendor).health.Load()
}

// VendorStatus is a vendor's governance state, JSON-able, for GET /v1/vendors.
type VendorStatus struct {
	Vendor  string        `json:"vendor"`
	Breaker BreakerStatus `json:"breaker"`
	// ToolBreakers are the breakers of the vendor's tools that have their
	// own (Options.ToolBreaker), by tool name.
	ToolBreakers map[string]BreakerStatus `json:"tool_breakers,omitempty"`
	// Ramp is the recovery ramp in force: the lower of the breaker's and
	// the health tracker's.
	Ramp    RampStatus   `json:"ramp"`
	Ejected bool         `json:"ejected"`
	Probe   *ProbeStatus `json:"last_probe,omitempty"` // nil when never probed
	Limits  LimitsStatus `json:"limits"`
	Usage   UsageStatus  `json:"usage"`
}

// BreakerStatus is a breaker's snapshot.
type BreakerStatus struct {
	State               string  `json:"state"` // closed, open, half_open
	Calls               int     `json:"calls"` // in the sliding window
	Failures            int     `json:"failures"`
	ConsecutiveFailures int     `json:"consecutive_failures"`
	Trips               int     `json:"trips"`
	RetryInSeconds      float64 `json:"retry_in_s,omitempty"` // when open
}

// RampStatus says how much traffic a recovering vendor takes.
type RampStatus struct {
	Percent float64 `json:"percent"` // 100 when not ramping
	Step    int     `json:"step"`    // from 0
	Steps   int     `json:"steps"`
	Done    bool    `json:"done"`
}

// ProbeStatus is the last active health probe.
type ProbeStatus struct {
	At    time.Time `json:"at"`
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
}

// LimitsStatus are the vendor's configured limits (zero: unlimited).
type LimitsStatus struct {
	RPS         float64 `json:"rps"`
	Burst       int     `json:"burst"`
	Concurrency int     `json:"concurrency"`
}

// UsageStatus is the vendor's current load on this instance.
type UsageStatus struct {
	InFlight          int64 `json:"in_flight"`
	LimiterRejections int64 `json:"limiter_rejections"` // since start: rate limits and bulkhead
}

// Status returns the vendor's governance state.
func (g *Governor) Status(vendor string) VendorStatus {
	vs := g.state(vendor)
	snap := vs.breaker.Snapshot()
	st := VendorStatus{
		Vendor:  vendor,
		Breaker: breakerStatus(snap),
		Usage:   UsageStatus{InFlight: vs.inflight.Load(), LimiterRejections: vs.rejections.Load()},
	}
	for _, ts := range g.breakers.Snapshots() {
		if tool, ok := strings.CutPrefix(ts.Key, vendor+"/"); ok {
			if st.ToolBreakers == nil {
				st.ToolBreakers = map[string]BreakerStatus{}
			}
			st.ToolBreakers[tool] = breakerStatus(ts)
		}
	}
	ramp := snap.Ramp
	if h := vs.health.Load(); h != nil {
		hs := h.Snapshot()
		st.Ejected = hs.Ejected
		if hs.Ramp.Fraction < ramp.Fraction {
			ramp = hs.Ramp
		}
	}
	st.Ramp = RampStatus{Percent: ramp.Fraction * 100, Step: ramp.Index, Steps: ramp.Steps, Done: ramp.Done}
	vs.lastProbeMu.Lock()
	if vs.lastProbe != nil {
		p := *vs.lastProbe
		st.Probe = &p
	}
	vs.lastProbeMu.Unlock()
	l := g.limits(vendor)
	st.Limits = LimitsStatus{RPS: l.RPS, Burst: l.Burst, Concurrency: l.Concurrency}
	if r, ok := vendorRule(l); ok {
		st.Limits.Burst = r.Burst
	}
	return st
}

func breakerStatus(s breaker.Snapshot) BreakerStatus {
	return BreakerStatus{
		State: s.State.String(), Calls: s.Calls, Failures: s.Failures,
		ConsecutiveFailures: s.ConsecutiveFailures, Trips: s.Trips,
		RetryInSeconds: s.RetryIn.Seconds(),
	}
}

// BreakerState returns the state of a vendor's breaker: closed, open or
// half_open (for trace spans; cheaper than [Governor.Status]).
func (g *Governor) BreakerState(vendor string) string {
	return breaker.State(g.state(vendor).state.Load()).String()
}
