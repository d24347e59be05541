package govern_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/breaker"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/hub/retry"
	"github.com/toolhub/toolhub/registry"

	"github.com/toolhub/toolhub/internal/x/clocktest"
)

// clock is a settable clock (internal/x/clocktest).
type clock = clocktest.Clock

func newClock() *clock { return clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// syncBuffer is a bytes.Buffer safe for concurrent writers (the log).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// upstreams is a hub.Upstreams of in-process invokers that count calls.
type upstreams struct {
	fns   map[string]hub.InvokerFunc
	calls sync.Map // vendor → *atomic.Int64
}

func (u *upstreams) Upstream(id string) (hub.Invoker, bool) {
	f, ok := u.fns[id]
	if !ok {
		return nil, false
	}
	n, _ := u.calls.LoadOrStore(id, new(atomic.Int64))
	return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		n.(*atomic.Int64).Add(1)
		return f(ctx, c)
	}), true
}

func (u *upstreams) count(id string) int64 {
	n, ok := u.calls.Load(id)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

const (
	weatherIn  = `{"type":"object","required":["city"],"properties":{"city":{"type":"string"}},"additionalProperties":false}`
	weatherOut = `{"type":"object","required":["temp_c"],"properties":{"temp_c":{"type":"number"}}}`
)

func catalog(t testing.TB) *registry.Catalog {
	cat := registry.NewCatalog()
	for _, v := range []string{"weather-a", "weather-b"} {
		defs := []registry.ToolDef{
			{Name: "current", InputSchema: json.RawMessage(weatherIn), OutputSchema: json.RawMessage(weatherOut), Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
			{Name: "book", InputSchema: json.RawMessage(weatherIn)},
		}
		if errs := cat.SetVendorTools(v, defs); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	errs := cat.SetCapabilities([]registry.Capability{{
		Name: "weather.current", InputSchema: json.RawMessage(weatherIn), OutputSchema: json.RawMessage(`{"type":"object","required":["temp"]}`),
		Chain: []registry.ChainStep{
			{Tool: "weather-a/current", Result: []registry.Mapping{{From: "/temp_c", To: "/temp"}}},
			{Tool: "weather-b/current", Result: []registry.Mapping{{From: "/temp_c", To: "/temp"}}},
		},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return cat
}

func answer(temp float64) hub.InvokerFunc {
	return func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("sunny")}, Structured: map[string]any{"temp_c": temp}}, nil
	}
}

func failWith(err error) hub.InvokerFunc {
	return func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return nil, err }
}

// statusErr is an upstream HTTP failure, like servers.StatusError.
type statusErr struct {
	status int
	wait   time.Duration
}

func (e *statusErr) Error() string             { return "HTTP " + strconv.Itoa(e.status) }
func (e *statusErr) HTTPStatus() int           { return e.status }
func (e *statusErr) RetryAfter() time.Duration { return e.wait }

func httpError(status int, wait time.Duration) *hub.Error {
	code := hub.CodeUnavailable
	switch {
	case status == 429:
		code = hub.CodeRateLimited
	case status < 500:
		code = hub.CodeUpstream
	}
	return &hub.Error{Code: code, Message: "vendor answered HTTP " + strconv.Itoa(status), RetryAfter: wait, Err: &statusErr{status, wait}}
}

// env is a governed gateway under test.
type env struct {
	gov    *govern.Governor
	gw     *hub.Gateway
	ups    *upstreams
	clock  *clock
	log    *syncBuffer
	sleeps []time.Duration
	mu     sync.Mutex
}

func (e *env) waits() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Duration(nil), e.sleeps...)
}

// setup builds a Governor with a fake clock, a fake retry sleep (which
// advances the clock), jitter fixed at half the ceiling, and a gateway.
func setup(t testing.TB, fns map[string]hub.InvokerFunc, opts *govern.Options) *env {
	e := &env{ups: &upstreams{fns: fns}, clock: newClock(), log: &syncBuffer{}}
	o := govern.Options{}
	if opts != nil {
		o = *opts
	}
	o.Now = e.clock.Now
	o.Logger = slog.New(slog.NewJSONHandler(e.log, nil))
	o.Retry.Rand = func() float64 { return 0.5 }
	o.Retry.Sleep = func(ctx context.Context, d time.Duration) error {
		e.mu.Lock()
		e.sleeps = append(e.sleeps, d)
		e.mu.Unlock()
		e.clock.Advance(d)
		return ctx.Err()
	}
	e.gov = govern.New(&o)
	e.gw = hub.NewGateway(catalog(t), e.ups, &hub.Options{
		Outer:          []hub.Middleware{e.gov.OuterMiddleware()},
		Vendor:         []hub.Middleware{e.gov.VendorMiddleware()},
		DefaultTimeout: time.Minute,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:            e.clock.Now,
	})
	return e
}

func (e *env) call(t testing.TB, name string, c hub.Call) (*hub.Result, *hub.Error) {
	t.Helper()
	c.Name = name
	if c.Arguments == nil {
		c.Arguments = map[string]any{"city": "Oslo"}
	}
	r, err := e.gw.Call(t.Context(), &c)
	if err != nil {
		var he *hub.Error
		if !errors.As(err, &he) {
			t.Fatalf("err = %v (%T), want *hub.Error", err, err)
		}
		return nil, he
	}
	return r, nil
}

func TestBreakerOpensThenFailsFast(t *testing.T) {
	tests := []struct {
		name    string
		breaker *breaker.Options
		trips   int // calls until the circuit opens
	}{
		{"consecutive failures", nil, 5},
		{"failure ratio over min calls", &breaker.Options{MinCalls: 8, ConsecutiveFailures: -1}, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, map[string]hub.InvokerFunc{"weather-a": failWith(httpError(503, 0))}, &govern.Options{
				Breaker: func(string) *breaker.Options { return tt.breaker },
				Retry:   retry.Policy{Max: -1},
			})
			for i := range tt.trips {
				if _, err := e.call(t, "weather-a__current", hub.Call{}); err == nil || err.Code != hub.CodeUnavailable {
					t.Fatalf("call %d: err = %v, want unavailable", i, err)
				}
			}
			if got := e.gov.Status("weather-a").Breaker.State; got != "open" {
				t.Fatalf("breaker = %s after %d failures, want open", got, tt.trips)
			}
			for range 50 {
				_, err := e.call(t, "weather-a__current", hub.Call{})
				if err == nil || err.Code != hub.CodeCircuitOpen || err.RetryAfter != 30*time.Second || !errors.Is(err, govern.ErrRefused) {
					t.Fatalf("err = %#v, want circuit_open with RetryAfter 30s", err)
				}
			}
			if got := e.ups.count("weather-a"); got != int64(tt.trips) {
				t.Errorf("upstream reached %d times, want %d (open circuit must not call it)", got, tt.trips)
			}
		})
	}
}

func TestChainFallsBackWhilePrimaryBreakerOpens(t *testing.T) {
	e := setup(t, map[string]hub.InvokerFunc{
		"weather-a": failWith(&hub.Error{Code: hub.CodeTimeout, Message: "slow"}),
		"weather-b": answer(7),
	}, nil)
	for i := range 40 {
		r, err := e.call(t, "weather.current", hub.Call{})
		if err != nil {
			t.Fatalf("call %d: client error %v", i, err)
		}
		if r.Provenance.Vendor != "weather-b" || !r.Provenance.Fallback {
			t.Fatalf("call %d: provenance %+v", i, r.Provenance)
		}
	}
	if got := e.gov.Status("weather-a").Breaker.State; got != "open" {
		t.Fatalf("primary breaker = %s, want open", got)
	}
	// 5 governed attempts (the consecutive-failure threshold), each retried 3 times.
	if got := e.ups.count("weather-a"); got != 5*4 {
		t.Errorf("primary reached %d times, want 20", got)
	}
	if got := e.gov.Status("weather-b").Breaker.State; got != "closed" {
		t.Errorf("secondary breaker = %s", got)
	}
}

func TestRetries(t *testing.T) {
	refused := &hub.Error{Code: hub.CodeUnavailable, Message: "connect", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		name     string
		tool     string
		errs     []error // per try; the last repeats; nil answers
		wantCode hub.Code
		tries    []int // c.Attempt per upstream call
		waits    []time.Duration
	}{
		{"503 retried with backoff", "current", []error{httpError(503, 0)}, hub.CodeUnavailable,
			[]int{1, 2, 3, 4}, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
		{"503 then success", "current", []error{httpError(503, 0), nil}, "", []int{1, 2}, []time.Duration{500 * time.Millisecond}},
		{"timeout retried", "current", []error{&hub.Error{Code: hub.CodeTimeout, Err: context.DeadlineExceeded}, nil}, "", []int{1, 2}, []time.Duration{500 * time.Millisecond}},
		{"400 not retried", "current", []error{httpError(400, 0)}, hub.CodeUpstream, []int{1}, nil},
		{"JSON-RPC error not retried", "current", []error{&hub.Error{Code: hub.CodeUpstream, Message: "JSON-RPC error -32000"}}, hub.CodeUpstream, []int{1}, nil},
		{"Retry-After honoured", "current", []error{httpError(429, 5*time.Second), nil}, "", []int{1, 2}, []time.Duration{5 * time.Second}},
		{"Retry-After over the cap fails at once", "current", []error{httpError(429, time.Hour)}, hub.CodeRateLimited, []int{1}, nil},
		{"not idempotent: 503 not retried", "book", []error{httpError(503, 0)}, hub.CodeUnavailable, []int{1}, nil},
		{"not idempotent: connection refused retried", "book", []error{refused, nil}, "", []int{1, 2}, []time.Duration{500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tries []int
			var n int
			up := func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
				tries = append(tries, c.Attempt)
				err := tt.errs[min(n, len(tt.errs)-1)]
				n++
				if err != nil {
					return nil, err
				}
				return answer(1)(ctx, c)
			}
			e := setup(t, map[string]hub.InvokerFunc{"weather-a": up}, nil)
			_, err := e.call(t, "weather-a__"+tt.tool, hub.Call{})
			var code hub.Code
			if err != nil {
				code = err.Code
			}
			if code != tt.wantCode {
				t.Errorf("code = %q (%v), want %q", code, err, tt.wantCode)
			}
			if diff := cmp.Diff(tt.tries, tries); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.waits, e.waits()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryNeverPastCallerDeadline(t *testing.T) {
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": failWith(httpError(503, 10*time.Second))}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := e.gw.Call(ctx, &hub.Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}})
	if hub.CodeOf(err) != hub.CodeUnavailable {
		t.Fatalf("err = %v, want the upstream's unavailable at once", err)
	}
	if got := e.ups.count("weather-a"); got != 1 || len(e.waits()) != 0 {
		t.Errorf("upstream calls %d, waits %v: a 10s Retry-After must not be slept within a 1s deadline", got, e.waits())
	}
}

func TestRateLimit(t *testing.T) {
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": answer(1)}, &govern.Options{
		VendorLimits: func(string) registry.Limits { return registry.Limits{RPS: 2, Burst: 5} },
		Headroom:     -1, // no retry headroom: interactive calls may empty the bucket
	})
	for i := range 5 {
		if _, err := e.call(t, "weather-a__current", hub.Call{}); err != nil {
			t.Fatalf("call %d of the burst: %v", i, err)
		}
	}
	_, err := e.call(t, "weather-a__current", hub.Call{})
	if err == nil || err.Code != hub.CodeRateLimited || err.RetryAfter != 500*time.Millisecond || !errors.Is(err, govern.ErrRefused) {
		t.Fatalf("err = %#v, want rate_limited with RetryAfter 500ms", err)
	}
	if got := e.ups.count("weather-a"); got != 5 {
		t.Errorf("upstream reached %d times, want 5", got)
	}
	if got := e.gov.Status("weather-a").Breaker.Calls; got != 5 {
		t.Errorf("breaker window has %d calls, want 5: a local refusal is no outcome", got)
	}
	e.clock.Advance(500 * time.Millisecond)
	if _, err := e.call(t, "weather-a__current", hub.Call{}); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
}

func TestTenantRateLimit(t *testing.T) {
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": answer(1)}, &govern.Options{
		TenantRule: func(tenant string) (limit.Rule, bool) {
			return limit.Rule{Rate: 1, Burst: 2}, tenant == "noisy"
		},
		Headroom: -1,
	})
	for range 2 {
		if _, err := e.call(t, "weather-a__current", hub.Call{Tenant: "noisy"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.call(t, "weather-a__current", hub.Call{Tenant: "noisy"}); err == nil || err.Code != hub.CodeRateLimited {
		t.Fatalf("noisy tenant: err = %v, want rate_limited", err)
	}
	if _, err := e.call(t, "weather-a__current", hub.Call{Tenant: "quiet"}); err != nil {
		t.Fatalf("another tenant must not be limited: %v", err)
	}
}

func TestBatchRefusedBeforeInteractive(t *testing.T) {
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": answer(1)}, &govern.Options{
		VendorLimits: func(string) registry.Limits { return registry.Limits{RPS: 1, Burst: 10} },
	})
	// Batch first attempts must leave 70% of 10: three pass.
	var batch int
	for {
		_, err := e.call(t, "weather-a__current", hub.Call{Priority: hub.Batch})
		if err != nil {
			if err.Code != hub.CodeRateLimited {
				t.Fatal(err)
			}
			break
		}
		batch++
	}
	var interactive int
	for {
		if _, err := e.call(t, "weather-a__current", hub.Call{}); err != nil {
			break
		}
		interactive++
	}
	if batch != 3 || interactive != 4 {
		t.Errorf("admitted %d batch then %d interactive; want 3 then 4 (interactive keeps 30%% headroom)", batch, interactive)
	}
}

func TestBulkheadOverloaded(t *testing.T) {
	const n = 3
	entered := make(chan struct{})
	release := make(chan struct{})
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		entered <- struct{}{}
		<-release
		return answer(1)(ctx, c)
	}}, &govern.Options{
		VendorLimits: func(string) registry.Limits { return registry.Limits{Concurrency: n} },
		BulkheadWait: 5 * time.Millisecond,
	})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := e.gw.Call(t.Context(), &hub.Call{Name: "weather-a__current", Arguments: map[string]any{"city": "x"}})
			errs <- err
		})
	}
	for range n {
		<-entered
	}
	if got := e.gov.Status("weather-a").Usage.InFlight; got != n {
		t.Errorf("in flight = %d, want %d", got, n)
	}
	_, err := e.call(t, "weather-a__current", hub.Call{})
	if err == nil || err.Code != hub.CodeOverloaded {
		t.Fatalf("call %d: err = %v, want overloaded", n+1, err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	st := e.gov.Status("weather-a")
	if st.Usage.InFlight != 0 || st.Usage.LimiterRejections != 1 || st.Breaker.State != "closed" {
		t.Errorf("status = %+v", st)
	}
}

func TestHangingVendorTimesOutWithoutLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}, nil)
	e.gw = hub.NewGateway(catalog(t), e.ups, &hub.Options{
		Outer:          []hub.Middleware{e.gov.OuterMiddleware()},
		Vendor:         []hub.Middleware{e.gov.VendorMiddleware()},
		DefaultTimeout: 5 * time.Millisecond,
	})
	for range 3 {
		_, err := e.call(t, "weather-a__current", hub.Call{})
		if err == nil || err.Code != hub.CodeTimeout {
			t.Fatalf("err = %v, want timeout", err)
		}
	}
	if got := e.ups.count("weather-a"); got != 3*4 {
		t.Errorf("upstream calls = %d, want 12 (timeouts are retried)", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines: %d before, %d after", before, after)
	}
}

func TestRampAfterRecovery(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		if failing.Load() {
			return nil, httpError(503, 0)
		}
		return answer(1)(ctx, c)
	}}, &govern.Options{Retry: retry.Policy{Max: -1}})
	for range 5 {
		e.call(t, "weather-a__current", hub.Call{})
	}
	if st := e.gov.Status("weather-a"); st.Breaker.State != "open" {
		t.Fatalf("breaker = %+v, want open", st.Breaker)
	}
	failing.Store(false)
	e.clock.Advance(30 * time.Second) // the first cool-down
	for i := range 3 {                // half-open trials
		if _, err := e.call(t, "weather-a__current", hub.Call{}); err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
	}
	var got []int64
	for step := range 4 {
		if step > 0 {
			e.clock.Advance(30 * time.Second)
		}
		before := e.ups.count("weather-a")
		for range 100 {
			if _, err := e.call(t, "weather-a__current", hub.Call{}); err != nil {
				if err.Code != hub.CodeCircuitOpen || !errors.Is(err, govern.ErrRefused) {
					t.Fatalf("ramp refusal: %v", err)
				}
			}
		}
		got = append(got, e.ups.count("weather-a")-before)
	}
	if diff := cmp.Diff([]int64{5, 25, 50, 100}, got); diff != "" {
		t.Errorf("calls reaching the vendor per 100 during the ramp (-want +got):\n%s", diff)
	}
	if st := e.gov.Status("weather-a"); !st.Ramp.Done || st.Ramp.Percent != 100 || st.Breaker.State != "closed" {
		t.Errorf("status = %+v", st)
	}
}

func TestChainSkipsRampingPrimary(t *testing.T) {
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": answer(1), "weather-b": answer(2)}, nil)
	e.gov.Breaker("weather-a").Trip()
	e.clock.Advance(30 * time.Second)
	for range 3 {
		e.call(t, "weather-a__current", hub.Call{})
	}
	for i := range 20 {
		if _, err := e.call(t, "weather.current", hub.Call{}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if a, b := e.ups.count("weather-a"), e.ups.count("weather-b"); a != 3+1 || b != 19 {
		t.Errorf("primary %d (3 trials + 5%% of 20), secondary %d; want 4 and 19", a, b)
	}
}

func TestProbesEjectAndReadmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var healthy atomic.Bool
		ups := &upstreams{fns: map[string]hub.InvokerFunc{"weather-a": answer(1)}}
		g := govern.New(&govern.Options{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
		gw := hub.NewGateway(catalog(t), ups, &hub.Options{Vendor: []hub.Middleware{g.VendorMiddleware()}})
		call := func() error {
			_, err := gw.Call(t.Context(), &hub.Call{Name: "weather-a__current", Arguments: map[string]any{"city": "x"}})
			return err
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		g.StartProbes(ctx, "weather-a", time.Second, func(ctx context.Context) error {
			if healthy.Load() {
				return nil
			}
			return errors.New("probe: HTTP 503")
		})
		time.Sleep(2500 * time.Millisecond) // probes at 0s, 1s, 2s (fake time)
		synctest.Wait()
		st := g.Status("weather-a")
		if !st.Ejected || st.Probe == nil || st.Probe.OK || st.Probe.Error != "probe: HTTP 503" {
			t.Fatalf("status after 3 failed probes = %+v", st)
		}
		err := call()
		if hub.CodeOf(err) != hub.CodeUnavailable || !strings.Contains(err.Error(), "ejected by health probe") || ups.count("weather-a") != 0 {
			t.Fatalf("call to ejected vendor: %v (upstream calls %d)", err, ups.count("weather-a"))
		}
		healthy.Store(true)
		time.Sleep(time.Second)
		synctest.Wait()
		st = g.Status("weather-a")
		if st.Ejected || st.Ramp.Percent != 5 || !st.Probe.OK {
			t.Fatalf("status after a good probe = %+v", st)
		}
		if err := call(); err != nil {
			t.Fatalf("first call after re-admission: %v", err)
		}
		g.StopProbes("weather-a")
		if g.Health("weather-a") != nil {
			t.Error("health kept after StopProbes")
		}
	})
}

func TestDecisionLog(t *testing.T) {
	var n int
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		n++
		if n == 1 {
			return nil, &hub.Error{Code: hub.CodeTimeout, Message: "no answer for " + c.Arguments["city"].(string)}
		}
		return answer(3)(ctx, c)
	}}, &govern.Options{VendorLimits: func(string) registry.Limits { return registry.Limits{RPS: 10, Burst: 10} }})
	secret := map[string]any{"city": "s3cret-value"}
	if _, err := e.call(t, "weather-a__current", hub.Call{Tenant: "acme", ID: "call-1", Arguments: secret}); err != nil {
		t.Fatal(err)
	}
	logged := e.log.String()
	if strings.Contains(logged, "s3cret-value") {
		t.Fatalf("log leaks an argument value:\n%s", logged)
	}
	var line struct {
		Msg        string        `json:"msg"`
		CallID     string        `json:"call_id"`
		Tenant     string        `json:"tenant"`
		Tool       string        `json:"tool"`
		Vendor     string        `json:"vendor"`
		Outcome    string        `json:"outcome"`
		Attempts   []hub.Attempt `json:"attempts"`
		Decisions  []string      `json:"decisions"`
		Fallback   *bool         `json:"fallback"`
		Cached     *bool         `json:"cached"`
		Stale      *bool         `json:"stale"`
		Queued     *bool         `json:"queued"`
		LatencyMS  *float64      `json:"latency_ms"`
		DecisionUS *int64        `json:"decision_us"`
		Arguments  any           `json:"arguments"`
	}
	lines := strings.Split(strings.TrimSpace(logged), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one log line per call, got %d:\n%s", len(lines), logged)
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	if line.Msg != "call" || line.CallID != "call-1" || line.Tenant != "acme" || line.Tool != "weather-a__current" ||
		line.Vendor != "weather-a" || line.Outcome != "ok" || line.Fallback == nil || line.Cached == nil ||
		line.Stale == nil || line.Queued == nil || line.LatencyMS == nil || line.DecisionUS == nil || line.Arguments != nil {
		t.Errorf("log line lacks fields: %s", lines[0])
	}
	wantAttempts := []hub.Attempt{
		{Vendor: "weather-a", Tool: "current", Outcome: "timeout", Error: "no answer for [redacted]"},
		{Vendor: "weather-a", Tool: "current", Outcome: "ok"},
	}
	if diff := cmp.Diff(wantAttempts, line.Attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	wantDecisions := []string{"breaker weather-a closed", "rate v:weather-a allowed", "retry 1 after 500ms: timeout", "rate v:weather-a allowed"}
	if diff := cmp.Diff(wantDecisions, line.Decisions); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}

	e.gov.SetDebug("acme", true)
	e.call(t, "weather-a__current", hub.Call{Tenant: "acme", Arguments: secret})
	if !strings.Contains(e.log.String(), `"arguments":{"city":"s3cret-value"}`) {
		t.Errorf("debug on: arguments not logged:\n%s", e.log.String())
	}
	e.gov.SetDebug("acme", false)
	before := len(e.log.String())
	e.call(t, "weather-a__current", hub.Call{Tenant: "acme", Arguments: secret})
	if strings.Contains(e.log.String()[before:], "s3cret-value") {
		t.Error("debug off again: arguments still logged")
	}
}

func TestMetricsHandler(t *testing.T) {
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": failWith(httpError(503, 0)), "weather-b": answer(1)}, &govern.Options{
		VendorLimits: func(string) registry.Limits { return registry.Limits{RPS: 100, Burst: 100, Concurrency: 4} },
	})
	for range 6 {
		e.call(t, "weather.current", hub.Call{})
	}
	e.call(t, "nope__nothing", hub.Call{})
	e.gov.StartProbes(t.Context(), "weather-b", time.Hour, func(context.Context) error { return nil })
	defer e.gov.StopProbes("weather-b")
	for deadline := time.Now().Add(5 * time.Second); e.gov.Status("weather-b").Probe == nil; { // the first probe runs at once
		if time.Now().After(deadline) {
			t.Fatal("no probe ran")
		}
		runtime.Gosched()
	}
	rec := httptest.NewRecorder()
	e.gov.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`toolhub_calls_total{outcome="fallback",tool="weather.current",vendor="weather-b"} 6`,
		`toolhub_calls_total{outcome="unknown_tool",tool="",vendor=""} 1`,
		`toolhub_call_duration_seconds_count{vendor="weather-b"} 6`,
		`toolhub_vendor_attempts_total{outcome="unavailable",vendor="weather-a"} 20`,
		`toolhub_vendor_attempts_total{outcome="ok",vendor="weather-b"} 6`,
		`toolhub_breaker_state{vendor="weather-a"} 2`,
		`toolhub_breaker_state{vendor="weather-b"} 0`,
		`toolhub_retries_total{vendor="weather-a"} 15`,
		`toolhub_inflight{vendor="weather-b"} 0`,
		`toolhub_probe_results_total{result="ok",vendor="weather-b"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

func TestStatusJSON(t *testing.T) {
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": failWith(httpError(503, 0))}, &govern.Options{
		VendorLimits: func(string) registry.Limits { return registry.Limits{RPS: 50, Concurrency: 16} },
		Retry:        retry.Policy{Max: -1},
	})
	for range 5 {
		e.call(t, "weather-a__current", hub.Call{})
	}
	e.clock.Advance(10 * time.Second)
	got, err := json.Marshal(e.gov.Status("weather-a"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"vendor":"weather-a","breaker":{"state":"open","calls":0,"failures":0,"consecutive_failures":0,"trips":1,"retry_in_s":20},` +
		`"ramp":{"percent":100,"step":3,"steps":4,"done":true},"ejected":false,` +
		`"limits":{"rps":50,"burst":50,"concurrency":16},"usage":{"in_flight":0,"limiter_rejections":0}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want retry.Class
	}{
		{"timeout", &hub.Error{Code: hub.CodeTimeout}, retry.Transient},
		{"unavailable", &hub.Error{Code: hub.CodeUnavailable}, retry.Transient},
		{"vendor 429", httpError(429, 0), retry.Transient},
		{"501", httpError(501, 0), retry.Permanent},
		{"invalid output", &hub.Error{Code: hub.CodeInvalidOutput}, retry.Permanent},
		{"upstream error", &hub.Error{Code: hub.CodeUpstream}, retry.Permanent},
		{"invalid arguments", &hub.Error{Code: hub.CodeInvalidArguments}, retry.Permanent},
		{"canceled", &hub.Error{Code: hub.CodeCanceled, Err: context.Canceled}, retry.Permanent},
		{"our refusal", &hub.Error{Code: hub.CodeRateLimited, Err: govern.ErrRefused}, retry.Permanent},
		{"connection refused", &hub.Error{Code: hub.CodeUnavailable, Err: syscall.ECONNREFUSED}, retry.Unsent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := govern.Classify(tt.err, 0); got != tt.want {
				t.Errorf("Classify = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestToolBreakerStopsOneToolOnly(t *testing.T) {
	ok, fail := answer(20), failWith(httpError(503, 0))
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		if c.Tool.Def.Name == "book" {
			return fail(ctx, c)
		}
		return ok(ctx, c)
	}}, &govern.Options{
		ToolBreaker: func(t *registry.Tool) bool { return t.Def.Name == "book" },
		Breaker: func(key string) *breaker.Options {
			if strings.Contains(key, "/") {
				return nil // the tool's breaker: defaults, 5 failures in a row
			}
			return &breaker.Options{ConsecutiveFailures: 100, MinCalls: 1000}
		},
		Retry: retry.Policy{Max: -1},
	})
	for i := range 5 {
		if _, err := e.call(t, "weather-a__book", hub.Call{}); err == nil || err.Code != hub.CodeUnavailable {
			t.Fatalf("call %d: err = %v, want unavailable", i, err)
		}
	}
	if _, err := e.call(t, "weather-a__book", hub.Call{}); err == nil || err.Code != hub.CodeCircuitOpen {
		t.Fatalf("after 5 failures: err = %v, want circuit_open", err)
	}
	if _, err := e.call(t, "weather-a__current", hub.Call{}); err != nil {
		t.Fatalf("the vendor's other tool is stopped too: %v", err)
	}
	st := e.gov.Status("weather-a")
	if st.Breaker.State != "closed" || st.ToolBreakers["book"].State != "open" {
		t.Errorf("status = %+v", st)
	}
	if got := e.ups.count("weather-a"); got != 6 {
		t.Errorf("upstream reached %d times, want 6 (5 failures and 1 ok)", got)
	}
}

// TestBulkheadFollowsLimitChange: the vendor's bulkhead is kept between
// calls, and a new concurrency limit takes effect at the next call.
func TestBulkheadFollowsLimitChange(t *testing.T) {
	var limitN atomic.Int64
	limitN.Store(1)
	entered := make(chan struct{})
	release := make(chan struct{})
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		entered <- struct{}{}
		<-release
		return answer(1)(ctx, c)
	}}, &govern.Options{
		VendorLimits: func(string) registry.Limits { return registry.Limits{Concurrency: int(limitN.Load())} },
		BulkheadWait: -1,
	})
	errs := make(chan error, 2)
	call := func() {
		_, err := e.gw.Call(t.Context(), &hub.Call{Name: "weather-a__current", Arguments: map[string]any{"city": "x"}})
		errs <- err
	}
	go call()
	<-entered
	if _, err := e.call(t, "weather-a__current", hub.Call{}); err == nil || err.Code != hub.CodeOverloaded {
		t.Fatalf("second call at limit 1: err = %v, want overloaded", err)
	}
	limitN.Store(2)
	go call()
	<-entered // admitted under the new limit while the first is in flight
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := e.gov.Status("weather-a").Usage.InFlight; got != 0 {
		t.Errorf("in flight = %d after both calls", got)
	}
}
