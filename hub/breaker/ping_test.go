package breaker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestRunPings: an open breaker with a waiting caller is pinged every
// interval; a failed ping changes nothing (no trip, no half-open), the
// first good one turns it half-open on evidence, and nothing is pinged
// while no caller waits or the circuit is not open.
func TestRunPings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var changes []Change
		b := New("doubao", &Options{CoolDown: time.Hour, OnStateChange: func(c Change) {
			mu.Lock()
			changes = append(changes, c)
			mu.Unlock()
		}})
		var pings atomic.Int32
		var up, waiting atomic.Bool
		p := ProberFunc(func(context.Context) error {
			pings.Add(1)
			if up.Load() {
				return nil
			}
			return errors.New("HTTP 500")
		})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go RunPings(ctx, 250*time.Millisecond, p, b, nil, waiting.Load)

		time.Sleep(time.Second)
		synctest.Wait()
		if n := pings.Load(); n != 0 {
			t.Fatalf("%d pings of a closed circuit", n)
		}
		b.Trip()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := pings.Load(); n != 0 {
			t.Fatalf("%d pings with no caller waiting", n)
		}
		waiting.Store(true)
		time.Sleep(time.Second)
		synctest.Wait()
		if n := pings.Load(); n != 4 {
			t.Fatalf("%d pings in 1s at 250ms, want 4", n)
		}
		if s := b.State(); s != Open {
			t.Fatalf("failed pings left the circuit %v, want open", s)
		}
		up.Store(true)
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		if s := b.State(); s != HalfOpen {
			t.Fatalf("a good ping left the circuit %v, want half_open", s)
		}
		mu.Lock()
		last := changes[len(changes)-1]
		mu.Unlock()
		if last.To != HalfOpen || !last.Evidence {
			t.Errorf("last change %+v, want half_open on evidence", last)
		}
		before := pings.Load()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := pings.Load() - before; n != 0 {
			t.Errorf("%d pings of a half-open circuit", n)
		}
	})
}

// TestRunPingsBackOff: pings that succeed while the upstream's calls keep
// failing (its protocol answers, its tools do not) turn the circuit
// half-open less and less often, so its trials are not spent four times a
// second; a close resets the pace.
func TestRunPingsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("doubao", &Options{CoolDown: time.Hour})
		var halfOpens atomic.Int32
		p := ProberFunc(func(context.Context) error { return nil })
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go RunPings(ctx, 100*time.Millisecond, p, b, nil, func() bool { return true })
		b.Trip()
		fail := func() {
			if b.State() == HalfOpen {
				halfOpens.Add(1)
				tk, err := b.Admit()
				if err != nil {
					t.Fatal(err)
				}
				tk.Done(Failure)
			}
		}
		// Every 50ms (between the pings), a trial of a half-open circuit fails.
		time.Sleep(50 * time.Millisecond)
		for range 200 { // 10s
			synctest.Wait()
			fail()
			time.Sleep(50 * time.Millisecond)
		}
		// Without a back-off: a half-open every 200ms, 50 in 10s. With it:
		// 1, 2, 4, 8, 8… intervals apart: at 0.1s, 0.3s, 0.7s, 1.5s, 2.3s … 9.5s.
		if n := halfOpens.Load(); n != 14 {
			t.Errorf("%d half-opens in 10s of good pings and failing trials, want 14", n)
		}
	})
}

// TestRunPingsReadmit: a good ping counts as a good probe for an upstream
// its probes ejected (it is re-admitted), and a failed one is recorded
// nowhere (the ejection's count of probe failures is the probes' alone).
func TestRunPingsReadmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewHealth("sd", &HealthOptions{Threshold: 1})
		b := New("sd", nil) // closed: only the ejection holds the calls
		h.Record(errors.New("probe: HTTP 500"))
		var up atomic.Bool
		p := ProberFunc(func(context.Context) error {
			if up.Load() {
				return nil
			}
			return errors.New("HTTP 500")
		})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go RunPings(ctx, 250*time.Millisecond, p, b, h, func() bool { return true })
		time.Sleep(time.Second)
		synctest.Wait()
		if s := h.Snapshot(); !s.Ejected || s.ConsecutiveFailures != 1 {
			t.Fatalf("after failed pings: ejected %v, %d failures recorded, want ejected, 1 (the probe's)", s.Ejected, s.ConsecutiveFailures)
		}
		up.Store(true)
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		if h.Ejected() {
			t.Fatal("a good ping did not re-admit the ejected upstream")
		}
		// An operator's ejection is not the pings' to end.
		h.Eject()
		time.Sleep(time.Second)
		synctest.Wait()
		if !h.Ejected() {
			t.Fatal("a ping re-admitted an upstream an operator ejected")
		}
	})
}
