package jobs

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/retry"
	"github.com/toolhub/toolhub/internal/redistest"
)

// TestContractWaitAndWake: a job finished as Waiting gets its attempt
// back, is not claimed before its NextAt, and Wake makes it due at once.
func TestContractWaitAndWake(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		j := newJob("acme", "image.generate", Queued, clk.Now())
		if err := s.Add(ctx, j); err != nil {
			t.Fatal(err)
		}
		c := claimWithin(t, s, "w1", time.Minute)
		if err := s.Finish(ctx, c.ID, "w1", Outcome{Status: Waiting, Error: "circuit_open: doubao", NextAt: clk.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != Waiting || got.Attempts != 0 || got.LastError != "circuit_open: doubao" {
			t.Errorf("after waiting: status %s, attempts %d, error %q; want waiting, 0", got.Status, got.Attempts, got.LastError)
		}
		mustClaimNone(t, s, "w2")
		if _, err := s.Transition(ctx, j.ID, Queued, Canceled, "", time.Time{}); !errors.Is(err, ErrConflict) {
			t.Errorf("queued→canceled of a waiting job = %v, want ErrConflict", err)
		}
		n, err := s.Wake(ctx)
		if err != nil || n != 1 {
			t.Fatalf("Wake = %d, %v; want 1", n, err)
		}
		if n, err := s.Wake(ctx); err != nil || n != 0 {
			t.Errorf("second Wake = %d, %v; want 0", n, err)
		}
		c = claimWithin(t, s, "w2", time.Minute)
		if c.ID != j.ID || c.Attempts != 1 {
			t.Errorf("claimed after wake: %+v; want attempts 1", c)
		}
		// Waiting until its NextAt (the deadline) without a wake: due then.
		if err := s.Finish(ctx, c.ID, "w2", Outcome{Status: Waiting, NextAt: clk.Now().Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		mustClaimNone(t, s, "w3")
		clk.Add(time.Minute)
		c = claimWithin(t, s, "w3", time.Minute)
		if c.ID != j.ID {
			t.Errorf("claimed %s, want %s", c.ID, j.ID)
		}
		if err := s.Finish(ctx, c.ID, "w3", Outcome{Status: Succeeded, KeepUntil: clk.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		want := []Status{Queued, Running, Waiting, Queued, Running, Waiting, Running, Succeeded}
		if d := cmp.Diff(want, statuses(allEvents(t, s, "acme"), j.ID)); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
	})
}

// TestContractWakeRetries: a job between retries (its backoff grown by
// failures during an outage) also tries again at once on Wake.
func TestContractWakeRetries(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		j := newJob("acme", "image.generate", Queued, clk.Now())
		if err := s.Add(ctx, j); err != nil {
			t.Fatal(err)
		}
		c := claimWithin(t, s, "w1", time.Minute)
		if err := s.Finish(ctx, c.ID, "w1", Outcome{Status: Queued, Error: "unavailable: 500", NextAt: clk.Now().Add(30 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		mustClaimNone(t, s, "w2")
		if n, err := s.Wake(ctx); err != nil || n != 1 {
			t.Fatalf("Wake = %d, %v; want 1", n, err)
		}
		c = claimWithin(t, s, "w2", time.Minute)
		if c.ID != j.ID || c.Attempts != 2 {
			t.Errorf("claimed after wake: %+v", c)
		}
	})
}

// TestContractCancelWaiting: a job waiting for a vendor can be canceled.
func TestContractCancelWaiting(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		q := NewQueue(open(t, clk.Now), &Options{Now: clk.Now})
		id, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "image.generate"})
		if err != nil {
			t.Fatal(err)
		}
		c := claimWithin(t, q, "w1", time.Minute)
		if err := q.Finish(ctx, c.ID, "w1", Outcome{Status: Waiting, NextAt: clk.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		j, err := q.Cancel(ctx, id, "")
		if err != nil || j.Status != Canceled {
			t.Fatalf("Cancel = %+v, %v", j, err)
		}
		if n, err := q.Wake(ctx); err != nil || n != 0 {
			t.Errorf("Wake after cancel = %d, %v; want 0", n, err)
		}
		mustClaimNone(t, q, "w2")
	})
}

var errVendorDown = &hub.Error{Code: hub.CodeUnavailable, Vendor: "doubao", Message: "doubao answered 500"}

// TestPoolJobOutlivesThreeAttempts: a job is tried until its deadline,
// not for a fixed number of tries (it used to fail after 3).
func TestPoolJobOutlivesThreeAttempts(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		q := NewQueue(open(t, nil), nil)
		var runs atomic.Int32
		startPool(t, &Pool{Store: q, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			if runs.Add(1) <= 6 {
				return nil, errVendorDown
			}
			return textResult("a fox"), nil
		}})
		id, err := q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "image.generate"})
		if err != nil {
			t.Fatal(err)
		}
		j := waitStatus(t, q, id, Succeeded)
		if j.Attempts != 7 {
			t.Errorf("attempts %d, want 7", j.Attempts)
		}
	})
}

// TestPoolFailsAtItsDeadline: a job that keeps failing fails when its
// deadline passes, saying so and naming the last error.
func TestPoolFailsAtItsDeadline(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		clk := newClock()
		q := NewQueue(open(t, clk.Now), &Options{Now: clk.Now})
		var runs atomic.Int32
		backoff := retry.Policy{Base: time.Minute, Cap: time.Minute, Rand: func() float64 { return 0.5 }} // 30s
		startPool(t, &Pool{Store: q, Now: clk.Now, Backoff: backoff, Deadline: func(tool string) time.Duration {
			if tool != "image.generate" {
				t.Errorf("deadline asked for %q", tool)
			}
			return 15 * time.Minute
		}, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			runs.Add(1)
			return nil, errVendorDown
		}})
		id, err := q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "image.generate"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the first try", func() bool { j, _ := q.Get(context.Background(), id); return j.Attempts == 1 && j.Status == Queued })
		clk.Add(14 * time.Minute) // retried, still before the deadline
		waitFor(t, "the second try", func() bool { j, _ := q.Get(context.Background(), id); return j.Attempts == 2 && j.Status == Queued })
		clk.Add(2 * time.Minute) // past it
		j := waitStatus(t, q, id, Failed)
		if !strings.Contains(j.LastError, "deadline passed (15m0s after it was queued)") || !strings.Contains(j.LastError, "doubao answered 500") {
			t.Errorf("last error %q", j.LastError)
		}
		if runs.Load() != 2 {
			t.Errorf("runs %d, want 2 (none after the deadline)", runs.Load())
		}
	})
}

// TestPoolPermanentErrorsFailAtOnce: errors another try cannot fix end
// the job on its first try, however far its deadline.
func TestPoolPermanentErrorsFailAtOnce(t *testing.T) {
	for _, code := range []hub.Code{hub.CodeInvalidArguments, hub.CodeBudgetExceeded, hub.CodeForbidden, hub.CodePrivacy} {
		t.Run(string(code), func(t *testing.T) {
			forEach(t, func(t *testing.T, open opener) {
				q := NewQueue(open(t, nil), nil)
				startPool(t, &Pool{Store: q, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
					return nil, &hub.Error{Code: code, Message: "no"}
				}})
				id, _ := q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "image.generate"})
				j := waitStatus(t, q, id, Failed)
				if j.Attempts != 1 || !strings.Contains(j.LastError, string(code)) {
					t.Errorf("attempts %d, error %q", j.Attempts, j.LastError)
				}
			})
		})
	}
}

func breakerOpen(wait time.Duration) error {
	return &hub.Error{Code: hub.CodeCircuitOpen, Vendor: "doubao", RetryAfter: wait, Message: "vendor \"doubao\" is failing; its circuit is open"}
}

// TestPoolWaitsForAVendor: a job whose vendors all refuse (breakers open,
// ejected) waits without burning attempts and runs when woken.
func TestPoolWaitsForAVendor(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		q := NewQueue(open(t, clk.Now), &Options{Now: clk.Now})
		var down atomic.Bool
		down.Store(true)
		var runs atomic.Int32
		p := &Pool{Store: q, Now: clk.Now, MaxWait: time.Minute, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			runs.Add(1)
			if down.Load() {
				// A capability whose two vendors refuse: one breaker open,
				// one vendor ejected.
				return nil, &hub.Error{Code: hub.CodeUnavailable, Message: "capability \"image.generate\": every vendor failed",
					Err: errors.Join(breakerOpen(30*time.Second),
						&hub.Error{Code: hub.CodeUnavailable, Vendor: "sd", Details: map[string]any{"reason": "ejected"}, Message: "sd ejected"})}
			}
			return textResult("a fox"), nil
		}}
		startPool(t, p)
		id, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "image.generate"})
		if err != nil {
			t.Fatal(err)
		}
		j := waitStatus(t, q, id, Waiting)
		if j.Attempts != 0 || runs.Load() != 1 {
			t.Errorf("waiting: attempts %d, runs %d; want 0, 1", j.Attempts, runs.Load())
		}
		// It waits for the open breaker's cool-down, not the backoff.
		if w := j.NextAt.Sub(clk.Now()); w < 30*time.Second || w > 33*time.Second {
			t.Errorf("waits %v, want the breaker's 30s (+ up to 10%% spread)", w)
		}
		// Woken while the vendors still refuse: it waits again, still no attempt spent.
		if n, err := p.Wake(ctx); err != nil || n != 1 {
			t.Fatalf("Wake = %d, %v", n, err)
		}
		waitFor(t, "a second run", func() bool { return runs.Load() == 2 })
		j = waitStatus(t, q, id, Waiting)
		if j.Attempts != 0 {
			t.Errorf("attempts %d after waiting twice, want 0", j.Attempts)
		}
		down.Store(false)
		if _, err := p.Wake(ctx); err != nil {
			t.Fatal(err)
		}
		j = waitStatus(t, q, id, Succeeded)
		if j.Attempts != 1 || runs.Load() != 3 {
			t.Errorf("attempts %d, runs %d; want 1, 3", j.Attempts, runs.Load())
		}
	})
}

// TestVendorsDown: which errors make a job wait for a vendor, and how long.
func TestVendorsDown(t *testing.T) {
	skip := &hub.Error{Code: hub.CodeCircuitOpen, Vendor: "doubao", Details: map[string]any{"reason": "ramp"}, Message: "recovering"}
	if w, down := DefaultVendorsDown(skip); !down || w != RampWait {
		t.Errorf("a ramp skip: %v, %v; want a short wait (%v) without an attempt", w, down, RampWait)
	}
	if _, down := DefaultVendorsDown(&hub.Error{Code: hub.CodeUnavailable, Err: errors.Join(breakerOpen(time.Second), errVendorDown)}); down {
		t.Errorf("a chain with one vendor answering 500 counts as vendors down")
	}
	if w, down := DefaultVendorsDown(&hub.Error{Code: hub.CodeUnavailable, Err: errors.Join(breakerOpen(2*time.Second), breakerOpen(time.Second))}); !down || w != time.Second {
		t.Errorf("two open breakers: %v, %v; want down, the shorter wait 1s", w, down)
	}
}

// TestRedisWakeReachesEveryInstance: a wake on one instance wakes the
// idle workers of another at once (Redis pub/sub), not at their next poll.
func TestRedisWakeReachesEveryInstance(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	prefix := redistest.Prefix(t, c)
	open := func() *Queue {
		s, err := NewRedis(ctx, c, &RedisOptions{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		return NewQueue(s, nil)
	}
	qa, qb := open(), open()
	var down atomic.Bool
	down.Store(true)
	run := func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		if down.Load() {
			return nil, breakerOpen(time.Hour)
		}
		return textResult("a fox"), nil
	}
	// Instance b polls once an hour: only a wake can make it claim soon.
	pb := &Pool{Store: qb, Run: run, Poll: time.Hour}
	startPool(t, pb)
	id, err := qb.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "image.generate"})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, qb, id, Waiting)
	down.Store(false)
	if n, err := qa.Wake(ctx); err != nil || n != 1 { // instance a saw the vendor come back
		t.Fatalf("Wake = %d, %v", n, err)
	}
	waitStatus(t, qb, id, Succeeded)
}

// TestPoolWakeDuringARefusedRun: a vendor that comes back while a job's
// run is being refused wakes nobody (the job is running, not waiting);
// the job must not then sleep until its MaxWait.
func TestPoolWakeDuringARefusedRun(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		q := NewQueue(open(t, nil), nil)
		inRun, release := make(chan struct{}), make(chan struct{})
		var runs atomic.Int32
		p := &Pool{Store: q, MaxWait: time.Hour, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			if runs.Add(1) == 1 {
				close(inRun)
				<-release
				return nil, breakerOpen(0) // half-open, its trials taken: no wait of its own
			}
			return textResult("a fox"), nil
		}}
		startPool(t, p)
		id, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "image.generate"})
		if err != nil {
			t.Fatal(err)
		}
		<-inRun
		if n, err := p.Wake(ctx); err != nil || n != 0 { // the breaker closed: nothing waits yet
			t.Fatalf("Wake = %d, %v; want 0", n, err)
		}
		close(release)
		waitStatus(t, q, id, Succeeded)
	})
}
