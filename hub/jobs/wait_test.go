package jobs

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/retry"
)

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
		clk.Advance(14 * time.Minute) // retried, still before the deadline
		waitFor(t, "the second try", func() bool { j, _ := q.Get(context.Background(), id); return j.Attempts == 2 && j.Status == Queued })
		clk.Advance(2 * time.Minute) // past it
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
		// It waits for the open breaker's cool-down, not the backoff,
		// spread over its second half (its retry may be the breaker's trial).
		if w := j.NextAt.Sub(clk.Now()); w < 15*time.Second || w > 30*time.Second {
			t.Errorf("waits %v, want the breaker's 30s spread over [15s, 30s]", w)
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

// TestPoolWakesAtNextAt: a job left waiting for its vendor runs again
// when its wait is over, not at the workers' next poll: with a poll of an
// hour, it used to sit until then (its retry, which may be its vendor's
// trial, lagged by up to a poll, 500ms by default).
func TestPoolWakesAtNextAt(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		q := NewQueue(open(t, nil), nil)
		var runs atomic.Int32
		startPool(t, &Pool{Store: q, Poll: time.Hour, MaxWait: 20 * time.Millisecond, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			if runs.Add(1) <= 3 {
				return nil, breakerOpen(0)
			}
			return textResult("a fox"), nil
		}})
		id, err := q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "image.generate"})
		if err != nil {
			t.Fatal(err)
		}
		j := waitStatus(t, q, id, Succeeded)
		if runs.Load() != 4 || j.Attempts != 1 {
			t.Errorf("runs %d, attempts %d; want 4 runs, 1 attempt (waits give theirs back)", runs.Load(), j.Attempts)
		}
	})
}

// TestPoolKeepsAWakeNotYetDue: the timer wakes the workers only for jobs
// that are due. It used to also drop the wake-ups due within the next
// millisecond: the stores keep next_at in milliseconds, so such a job
// was not yet claimable when the workers looked, and with no wake-up
// left it sat until the next poll (an hour in TestPoolWakesAtNextAt,
// which failed now and then on a loaded machine).
func TestPoolKeepsAWakeNotYetDue(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p := &Pool{Concurrency: 1, Now: func() time.Time { return now }, wake: make(chan struct{}, 1)}
	p.wakeAt(now.Add(500 * time.Microsecond))
	p.dueFired()
	p.dueMu.Lock()
	left := len(p.due)
	p.dueTimer.Stop()
	p.due, p.dueStopped = nil, true // as Stop does: a firing under way finds nothing to re-arm
	p.dueMu.Unlock()
	if left != 1 {
		t.Errorf("after the timer fired half a millisecond early, %d wake-ups are left; want the job's, 1", left)
	}
	if len(p.wake) != 0 {
		t.Errorf("the workers were woken for a job not yet due")
	}
}
