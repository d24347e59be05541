package fallback_test

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/registry"
)

type fixture struct {
	clk    *clock
	vs     vendors
	jobs   *jobs
	layer  *cache.Layer
	router *fallback.Router
	gw     *hub.Gateway
}

type fixtureOpts struct {
	cache bool
	rand  func() float64
	cost  func(c *hub.Call, s registry.ChainStep) float64
}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	f := &fixture{clk: newClock(), vs: newVendors(), jobs: &jobs{}}
	opts := &fallback.Options{Config: testConfig, Enqueuer: f.jobs, Parker: f.jobs, Rand: o.rand, Cost: o.cost, Now: f.clk.Now}
	hopts := &hub.Options{Now: f.clk.Now}
	if o.cache {
		f.layer = cache.New(&cache.Options{Now: f.clk.Now, Config: cache.Config{Default: cache.Policy{TTL: registry.Duration(10 * time.Minute)}}})
		opts.Stale = f.layer.LastKnownGood
		hopts.Call = []hub.Middleware{f.layer.Middleware()}
	}
	f.router = fallback.New(opts)
	hopts.Route = f.router.Route
	f.gw = hub.NewGateway(catalog(t), f.vs, hopts)
	return f
}

func TestPrimaryFailsSecondaryAnswers(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.vs["weather-a"].mode.Store("fail")
	for range 20 {
		r, err := call(f.gw, "weather.current")
		if err != nil {
			t.Fatalf("client saw an error: %v", err)
		}
		p := r.Provenance
		if p.Vendor != "weather-b" || !p.Fallback || p.Capability != "weather.current" || p.Stale || p.Queued {
			t.Fatalf("provenance = %+v", p)
		}
		if r.Structured.(map[string]any)["temp"] != 2.0 {
			t.Fatalf("structured = %v", r.Structured)
		}
	}
	f.vs["weather-a"].mode.Store("ok")
	r, _ := call(f.gw, "weather.current")
	if r.Provenance.Vendor != "weather-a" || r.Provenance.Fallback {
		t.Fatalf("primary back: %+v", r.Provenance)
	}
}

func TestEveryVendorFailsStaleAnswer(t *testing.T) {
	f := newFixture(t, fixtureOpts{cache: true})
	if _, err := call(f.gw, "weather.current"); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Hour) // well past the 10m TTL
	f.vs["weather-a"].mode.Store("fail")
	f.vs["weather-b"].mode.Store("timeout")
	r, err := call(f.gw, "weather.current")
	if err != nil {
		t.Fatal(err)
	}
	p := r.Provenance
	if !p.Stale || p.AgeSeconds != 3600 || p.Vendor != "weather-a" || p.Capability != "weather.current" || p.Queued {
		t.Fatalf("provenance = %+v", p)
	}
	if r.Structured.(map[string]any)["temp"] != 1.0 {
		t.Fatalf("structured = %v", r.Structured)
	}
	// The stale answer is not written back as fresh.
	f.vs["weather-a"].mode.Store("ok")
	f.vs["weather-a"].temp = 7
	if r, _ := call(f.gw, "weather.current"); r.Provenance.Cached || r.Structured.(map[string]any)["temp"] != 7.0 {
		t.Fatalf("after recovery: %+v %v", r.Provenance, r.Structured)
	}
}

func TestEveryVendorFailsQueued(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.vs["weather-a"].mode.Store("fail")
	f.vs["weather-b"].mode.Store("fail")
	r, err := call(f.gw, "weather.queued")
	if err != nil {
		t.Fatalf("queueable call failed: %v", err)
	}
	p := r.Provenance
	if !p.Queued || p.JobID != "job-1" || r.IsError || p.Capability != "weather.queued" {
		t.Fatalf("result = %+v", r)
	}
	if txt := r.Content[0].(mcp.TextContent).Text; txt != fallback.QueuedText {
		t.Fatalf("text = %q", txt)
	}
	if len(f.jobs.queued) != 1 || f.jobs.queued[0] != "weather.queued" {
		t.Fatalf("enqueued %v", f.jobs.queued)
	}
}

func TestNothingWorks(t *testing.T) {
	f := newFixture(t, fixtureOpts{cache: true})
	f.vs["weather-a"].mode.Store("fail")
	f.vs["weather-b"].mode.Store("timeout")
	_, err := call(f.gw, "weather.current")
	var e *hub.Error
	if !errors.As(err, &e) || e.Code != hub.CodeUnavailable {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{`capability "weather.current": every vendor failed`, "vendor down", "too slow", "no last known good answer", "not queueable"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q does not say %q", e.Message, want)
		}
	}
	if d, ok := e.Details.([]map[string]string); !ok || len(d) != 2 || d[0]["vendor"] != "weather-a" || d[1]["code"] != "timeout" {
		t.Errorf("details = %#v", e.Details)
	}
	if len(f.jobs.queued) != 0 {
		t.Error("queued a call of a capability that does not allow it")
	}
}

func TestWeightedCanaryExactShare(t *testing.T) {
	f := newFixture(t, fixtureOpts{rand: (&seq{n: 1000}).Float64})
	served := map[string]int{}
	for range 1000 {
		r, err := call(f.gw, "weather.canary")
		if err != nil {
			t.Fatal(err)
		}
		if r.Provenance.Fallback {
			t.Fatalf("a canary answer is not a fallback: %+v", r.Provenance)
		}
		served[r.Provenance.Vendor]++
	}
	if served["weather-b"] != 50 || served["weather-a"] != 950 {
		t.Fatalf("served %v, want exactly 5%% (50) on the canary weather-b", served)
	}
	// A failing canary falls back to the chain.
	f.vs["weather-b"].mode.Store("fail")
	for range 100 {
		if r, err := call(f.gw, "weather.canary"); err != nil || r.Provenance.Vendor != "weather-a" {
			t.Fatalf("%v %v", r, err)
		}
	}
}

func TestCheapest(t *testing.T) {
	prices := map[string]float64{"weather-a/current": 3, "weather-b/current": 1}
	f := newFixture(t, fixtureOpts{cost: func(c *hub.Call, s registry.ChainStep) float64 { return prices[s.Tool] }})
	r, err := call(f.gw, "weather.cheap")
	if err != nil || r.Provenance.Vendor != "weather-b" || r.Provenance.Fallback {
		t.Fatalf("%+v %v", r, err)
	}
	if f.vs["weather-a"].calls.Load() != 0 {
		t.Fatal("the dear vendor was tried first")
	}
}

func TestSwitchOff(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	m := f.router.Modes()
	if err := m.SwitchOff("weather.current"); !errors.Is(err, fallback.ErrCore) {
		t.Fatalf("switching off a core capability: %v", err)
	}
	if err := m.SwitchOff("weather.queued"); err != nil {
		t.Fatal(err)
	}
	_, err := call(f.gw, "weather.queued")
	if e := hub.AsError(err); e.Code != hub.CodeUnavailable || !strings.Contains(e.Message, "switched off by operator") {
		t.Fatalf("err = %v", err)
	}
	if f.vs["weather-a"].calls.Load()+f.vs["weather-b"].calls.Load() != 0 || len(f.jobs.queued) != 0 {
		t.Fatal("a switched-off capability called a vendor or queued")
	}
	m.SwitchOn("weather.queued")
	if _, err := call(f.gw, "weather.queued"); err != nil {
		t.Fatal(err)
	}
}

func TestPinnedModes(t *testing.T) {
	f := newFixture(t, fixtureOpts{rand: (&seq{n: 100}).Float64})
	m := f.router.Modes()
	if err := m.Pin("weather.current", fallback.Degraded); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		r, err := call(f.gw, "weather.current")
		if err != nil || r.Provenance.Vendor != "weather-b" || !r.Provenance.Fallback {
			t.Fatalf("degraded: %+v %v", r, err)
		}
	}
	if n := f.vs["weather-a"].calls.Load(); n != 0 {
		t.Fatalf("degraded chain called the primary %d times", n)
	}
	// Alert: exactly AlertShare (10%) of calls try the secondary first.
	if err := m.Pin("weather.current", fallback.Alert); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := call(f.gw, "weather.current"); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := f.vs["weather-a"].calls.Load(), f.vs["weather-b"].calls.Load(); a != 90 || b != 20 {
		t.Fatalf("alert: primary %d (want 90), secondary %d (want 10+10)", a, b)
	}
	// Recovering: exactly RecoverShare (25%) try the primary first.
	_ = m.Pin("weather.current", fallback.Recovering)
	for range 100 {
		_, _ = call(f.gw, "weather.current")
	}
	if a := f.vs["weather-a"].calls.Load(); a != 90+25 {
		t.Fatalf("recovering: primary got %d calls, want 25", a-90)
	}
	if err := m.Pin("weather.current", "bogus"); err == nil {
		t.Fatal("pinned an unknown mode")
	}
	m.Unpin("weather.current")
	if got := m.Mode("weather.current"); got != fallback.Normal {
		t.Fatalf("unpinned mode = %s", got)
	}
}

func TestHighRiskParksWhileDegraded(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	// Normal: a high-risk capability still falls back.
	f.vs["weather-a"].mode.Store("fail")
	if r, err := call(f.gw, "weather.risky"); err != nil || r.Provenance.Vendor != "weather-b" {
		t.Fatalf("normal: %+v %v", r, err)
	}
	_ = f.router.Modes().Pin("weather.risky", fallback.Degraded)
	before := f.vs["weather-a"].calls.Load() + f.vs["weather-b"].calls.Load()
	r, err := call(f.gw, "weather.risky")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Provenance.Queued || r.Provenance.JobID != "review-1" || !strings.Contains(r.Content[0].(mcp.TextContent).Text, "needs_review") {
		t.Fatalf("parked result = %+v", r)
	}
	if after := f.vs["weather-a"].calls.Load() + f.vs["weather-b"].calls.Load(); after != before {
		t.Fatal("a degraded high-risk call reached a vendor")
	}
	if len(f.jobs.parked) != 1 || len(f.jobs.queued) != 0 {
		t.Fatalf("parked %v, queued %v", f.jobs.parked, f.jobs.queued)
	}
}

// TestDegradationThroughRouter: a failing primary walks the capability to
// Degraded through the route's own measurements; then the chain skips it.
func TestDegradationThroughRouter(t *testing.T) {
	f := newFixture(t, fixtureOpts{rand: (&seq{n: 100}).Float64})
	f.vs["weather-a"].mode.Store("fail")
	m := f.router.Modes()
	for range 40 { // one call a second for 40 s
		if _, err := call(f.gw, "weather.current"); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Second)
	}
	if got := m.Mode("weather.current"); got != fallback.Degraded {
		t.Fatalf("mode = %s after 40 s of failures, want degraded", got)
	}
	n := f.vs["weather-a"].calls.Load()
	for range 5 {
		_, _ = call(f.gw, "weather.current")
	}
	if f.vs["weather-a"].calls.Load() != n {
		t.Fatal("degraded route still calls the primary")
	}
}

// TestBreakerOpenPrimarySkipped: with hub/govern in the pipeline, an open
// breaker skips the primary without calling it, the secondary answers, and
// the skip counts toward the capability's degradation.
func TestBreakerOpenPrimarySkipped(t *testing.T) {
	clk := newClock()
	vs := newVendors()
	g := govern.New(&govern.Options{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry(), Now: clk.Now})
	g.Breaker("weather-a").Trip()
	router := fallback.New(&fallback.Options{Config: testConfig, Now: clk.Now, Rand: (&seq{n: 100}).Float64})
	gw := hub.NewGateway(catalog(t), vs, &hub.Options{Vendor: []hub.Middleware{g.VendorMiddleware()}, Route: router.Route, Now: clk.Now})
	for range 20 { // judged from the 10th call (t=9 s), alert after 10 s more
		r, err := call(gw, "weather.current")
		if err != nil || r.Provenance.Vendor != "weather-b" || !r.Provenance.Fallback {
			t.Fatalf("%+v %v", r, err)
		}
		clk.Advance(time.Second)
	}
	if n := vs["weather-a"].calls.Load(); n != 0 {
		t.Fatalf("open breaker let %d calls through", n)
	}
	if got := router.Modes().Mode("weather.current"); got != fallback.Alert {
		t.Fatalf("mode = %s, want alert", got)
	}
}

func TestGateBeforeCache(t *testing.T) {
	clk := newClock()
	layer := cache.New(&cache.Options{Now: clk.Now, Config: cache.Config{Default: cache.Policy{TTL: registry.Duration(time.Hour)}}})
	router := fallback.New(&fallback.Options{Config: testConfig, Stale: layer.LastKnownGood, Now: clk.Now})
	gw := hub.NewGateway(catalog(t), newVendors(), &hub.Options{Call: []hub.Middleware{router.Modes().Gate(), layer.Middleware()}, Route: router.Route, Now: clk.Now})
	if _, err := call(gw, "weather.cheap"); err != nil {
		t.Fatal(err)
	}
	if r, err := call(gw, "weather.cheap"); err != nil || !r.Provenance.Cached {
		t.Fatalf("%+v %v", r, err)
	}
	_ = router.Modes().SwitchOff("weather.cheap")
	if _, err := call(gw, "weather.cheap"); !strings.Contains(hub.AsError(err).Message, "switched off by operator") {
		t.Fatalf("a switched-off capability answered from the cache: %v", err)
	}
}

func TestPrivacyRefusedEverywhere(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, v := range f.vs {
		v.mode.Store("privacy")
	}
	_, err := call(f.gw, "weather.queued")
	if hub.CodeOf(err) != hub.CodePrivacy || len(f.jobs.queued) != 0 {
		t.Fatalf("err = %v, queued %v; want privacy_refused and no job", err, f.jobs.queued)
	}
}
