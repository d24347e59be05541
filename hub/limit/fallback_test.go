package limit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// flaky is a primary limiter that is up or down on command and counts its calls.
type flaky struct {
	down  atomic.Bool
	calls atomic.Int64
	keys  sync.Map // keys asked for
}

func (p *flaky) Allow(_ context.Context, key string, r Rule, n int) (Decision, error) {
	p.calls.Add(1)
	p.keys.Store(key, true)
	if p.down.Load() {
		return Decision{}, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	}
	return Decision{Allowed: true, Remaining: 42}, nil
}

func TestFallbackRecovery(t *testing.T) {
	p := &flaky{}
	var logs syncBuffer
	clock := newFakeClock()
	f := NewFallback(p, &FallbackOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: clock.Now})
	ctx := context.Background()
	rule := Rule{Rate: 1, Burst: 100}
	allow := func() Decision {
		t.Helper()
		d, err := f.Allow(ctx, "k", rule, 1)
		if err != nil {
			t.Fatalf("Allow: %v", err)
		}
		return d
	}

	if d := allow(); d.Remaining != 42 || f.Degraded() {
		t.Fatalf("primary up: %+v, degraded %v", d, f.Degraded())
	}
	p.down.Store(true)
	for range 10 {
		if d := allow(); d.Remaining == 42 {
			t.Fatal("answer from the primary while it is down")
		}
	}
	if !f.Degraded() || p.calls.Load() != 2 {
		t.Fatalf("after the outage: degraded %v, primary calls %d, want true, 2", f.Degraded(), p.calls.Load())
	}

	clock.Advance(time.Second) // probe fails: still degraded
	allow()
	f.probes.Wait()
	if !f.Degraded() || p.calls.Load() != 3 {
		t.Fatalf("after a failed probe: degraded %v, primary calls %d, want true, 3", f.Degraded(), p.calls.Load())
	}

	p.down.Store(false)
	allow() // no probe due yet
	f.probes.Wait()
	if !f.Degraded() {
		t.Fatal("recovered before the probe interval")
	}
	clock.Advance(time.Second)
	if d := allow(); d.Remaining == 42 {
		t.Error("the call that starts the probe waited for it")
	}
	f.probes.Wait()
	if f.Degraded() {
		t.Fatal("still degraded after a successful probe")
	}
	if d := allow(); d.Remaining != 42 {
		t.Errorf("after recovery: %+v, want the primary's answer", d)
	}
	if _, ok := p.keys.Load(probeKey); !ok {
		t.Errorf("probes did not use their own key %q", probeKey)
	}

	lines := logs.lines()
	if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[1], "level=INFO") {
		t.Errorf("log:\n%s\nwant one warning then one info line", strings.Join(lines, "\n"))
	}
}

func TestFallbackLogsOnceUnderConcurrency(t *testing.T) {
	p := &flaky{}
	p.down.Store(true)
	var logs syncBuffer
	f := NewFallback(p, &FallbackOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 50 {
				if _, err := f.Allow(context.Background(), "k", Rule{Rate: 1000, Burst: 1000}, 1); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	f.probes.Wait()
	if lines := logs.lines(); len(lines) != 1 {
		t.Errorf("%d log lines, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

func TestFallbackModes(t *testing.T) {
	rule := Rule{Rate: 1, Burst: 2}
	for _, tc := range []struct {
		mode    FallbackMode
		allowed int // of 5 calls
		err     error
	}{
		{FallbackLocal, 2, nil},
		{FailOpen, 5, nil},
		{FailClosed, 0, ErrUnavailable},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			p := &flaky{}
			p.down.Store(true)
			f := NewFallback(p, &FallbackOptions{Mode: tc.mode, Logger: discardLogger(), Now: newFakeClock().Now})
			allowed := 0
			for range 5 {
				d, err := f.Allow(context.Background(), "k", rule, 1)
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				if d.Allowed {
					allowed++
				}
			}
			if allowed != tc.allowed {
				t.Errorf("admitted %d of 5, want %d", allowed, tc.allowed)
			}
		})
	}
}

// The caller's own cancellation and invalid requests are not outages.
func TestFallbackCallerErrorsDoNotSwitch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	primary := LimiterFunc(func(ctx context.Context, _ string, _ Rule, _ int) (Decision, error) {
		return Decision{}, ctx.Err()
	})
	f := NewFallback(primary, &FallbackOptions{Logger: discardLogger()})
	if _, err := f.Allow(ctx, "k", Rule{Rate: 1, Burst: 1}, 1); !errors.Is(err, context.Canceled) || f.Degraded() {
		t.Errorf("cancelled caller: err %v, degraded %v; want context.Canceled, false", err, f.Degraded())
	}
	if _, err := f.Allow(context.Background(), "k", Rule{Rate: 1, Burst: 1}, 2); !errors.Is(err, ErrInvalid) || f.Degraded() {
		t.Errorf("invalid request: err %v, degraded %v; want ErrInvalid, false", err, f.Degraded())
	}
}

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		name         string
		r            Rule
		n, instances int
		want         Rule
	}{
		{"one instance", Rule{Rate: 30, Burst: 9, Reserve: 3}, 1, 1, Rule{Rate: 30, Burst: 9, Reserve: 3}},
		{"three", Rule{Rate: 30, Burst: 9, Reserve: 3}, 1, 3, Rule{Rate: 10, Burst: 3, Reserve: 1}},
		{"burst rounds up", Rule{Rate: 30, Burst: 10}, 1, 3, Rule{Rate: 10, Burst: 4}},
		{"burst fits n", Rule{Rate: 30, Burst: 10}, 8, 3, Rule{Rate: 10, Burst: 8}},
		{"burst fits n and reserve", Rule{Rate: 30, Burst: 10, Reserve: 3}, 6, 3, Rule{Rate: 10, Burst: 7, Reserve: 1}},
	} {
		if got := Share(tc.r, tc.n, tc.instances); got != tc.want {
			t.Errorf("%s: Share(%+v, %d, %d) = %+v, want %+v", tc.name, tc.r, tc.n, tc.instances, got, tc.want)
		}
	}
}

// A primary that cannot connect (Redis down): calls keep flowing on local limits at
// rate/N, the transition is logged once, and the primary is tried at most
// once per probe interval, in the background.
func TestFallbackRedisDown(t *testing.T) {
	var primaryCalls atomic.Int64
	// What hub/limit/redislimit returns for a Redis on a closed port.
	counted := LimiterFunc(func(ctx context.Context, key string, r Rule, n int) (Decision, error) {
		primaryCalls.Add(1)
		return Decision{}, fmt.Errorf("limit: redis: key %q: dial tcp 127.0.0.1:1: connect: connection refused", key)
	})
	var logs syncBuffer
	clock := newFakeClock()
	f := NewFallback(counted, &FallbackOptions{
		Instances: 3,
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		Now:       clock.Now,
	})
	ctx := context.Background()
	rule := Rule{Rate: 30, Burst: 9} // locally: 10/s, burst 3

	admittedAt := func(calls int) int {
		n := 0
		for range calls {
			d, err := f.Allow(ctx, "k", rule, 1)
			if err != nil {
				t.Fatalf("Allow during the outage: %v", err)
			}
			if d.Allowed {
				n++
			}
		}
		return n
	}
	if got := admittedAt(50); got != 3 {
		t.Errorf("first 50 calls admitted %d, want the local burst 3", got)
	}
	if !f.Degraded() {
		t.Error("Degraded() = false during the outage")
	}
	clock.Advance(500 * time.Millisecond) // 5 tokens at 10/s, capped at 3; no probe yet
	if got := admittedAt(50); got != 3 {
		t.Errorf("after 500ms: admitted %d, want 3", got)
	}
	if got := primaryCalls.Load(); got != 1 {
		t.Errorf("primary called %d times before the probe interval, want 1", got)
	}
	clock.Advance(600 * time.Millisecond) // past the probe interval: one background probe
	admittedAt(50)
	f.probes.Wait()
	if got := primaryCalls.Load(); got != 2 {
		t.Errorf("primary called %d times after one probe interval, want 2", got)
	}

	lines := logs.lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "connection refused") {
		t.Errorf("log = %q, want one warning naming the cause", lines)
	}
}
