// Package limittest is the contract suite of [limit.Limiter]: the local
// limiter, the Redis one (hub/limit/redislimit) and the fallback wrapper
// all pass it.
package limittest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/hub/limit"
)

// NewLimiter returns a fresh limiter (with keys no other test uses) and
// a function that moves the limiter's clock forward.
type NewLimiter func(t *testing.T) (l limit.Limiter, advance func(time.Duration))

// Run is the one suite every [limit.Limiter] implementation passes.
//
// Rates are low (10/s) so that the real time a Redis round trip takes moves
// a bucket by a small fraction of a token: assertions on whole tokens and on
// RetryAfter bounds hold whatever the machine's load.
func Run(t *testing.T, newLimiter NewLimiter) {
	t.Run("burst admitted then refused", func(t *testing.T) { testBurst(t, newLimiter) })
	t.Run("refill after time", func(t *testing.T) { testRefill(t, newLimiter) })
	t.Run("waiting RetryAfter admits", func(t *testing.T) { testRetryAfter(t, newLimiter) })
	t.Run("keys independent", func(t *testing.T) { testKeys(t, newLimiter) })
	t.Run("n greater than one", func(t *testing.T) { testN(t, newLimiter) })
	t.Run("reserve", func(t *testing.T) { testReserve(t, newLimiter) })
	t.Run("invalid", func(t *testing.T) { testInvalid(t, newLimiter) })
	t.Run("concurrent admits exactly the burst", func(t *testing.T) { testConcurrent(t, newLimiter) })
}

// testBurst: burst admitted then refused.
func testBurst(t *testing.T, newLimiter NewLimiter) {
	l, _ := newLimiter(t)
	start := time.Now()
	var got []limit.Decision
	for range 6 {
		got = append(got, allow(t, l, "k", rule, 1))
	}
	want := []limit.Decision{
		{Allowed: true, Remaining: 4}, {Allowed: true, Remaining: 3}, {Allowed: true, Remaining: 2},
		{Allowed: true, Remaining: 1}, {Allowed: true, Remaining: 0}, {Allowed: false, Remaining: 0},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Duration) bool { return true })); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	// One token takes 100ms at 10/s.
	retryAfterSince(t, got[5], 100*time.Millisecond, start)
	if err := got[5].Err(); !errors.Is(err, limit.ErrRateLimited) {
		t.Errorf("Err() = %v, want ErrRateLimited", err)
	}
}

// testRefill: refill after time.
func testRefill(t *testing.T, newLimiter NewLimiter) {
	l, advance := newLimiter(t)
	if n, _ := admitted(t, l, "k", rule); n != 5 {
		t.Fatalf("admitted %d, want 5", n)
	}
	advance(250 * time.Millisecond) // 2.5 tokens
	n, d := admitted(t, l, "k", rule)
	if n != 2 {
		t.Errorf("after 250ms: admitted %d, want 2", n)
	}
	retryAfterIn(t, d, 0, 50*time.Millisecond) // half a token is left
	advance(time.Hour)                         // refills to the burst, no more
	if n, _ := admitted(t, l, "k", rule); n != 5 {
		t.Errorf("after an hour: admitted %d, want the burst 5", n)
	}
}

// testRetryAfter: waiting RetryAfter admits.
func testRetryAfter(t *testing.T, newLimiter NewLimiter) {
	l, advance := newLimiter(t)
	r := limit.Rule{Rate: 2, Burst: 3}
	start := time.Now()
	admitted(t, l, "k", r)
	d := allow(t, l, "k", r, 2)
	retryAfterSince(t, d, time.Second, start) // 2 tokens at 2/s
	advance(d.RetryAfter)
	if d := allow(t, l, "k", r, 2); !d.Allowed {
		t.Errorf("after RetryAfter %v: refused %+v", d.RetryAfter, d)
	}
}

// testKeys: keys independent.
func testKeys(t *testing.T, newLimiter NewLimiter) {
	l, _ := newLimiter(t)
	if n, _ := admitted(t, l, "a", rule); n != 5 {
		t.Fatalf("key a: admitted %d, want 5", n)
	}
	if n, _ := admitted(t, l, "b", rule); n != 5 {
		t.Errorf("key b after a is exhausted: admitted %d, want 5", n)
	}
	other := limit.Rule{Rate: 10, Burst: 2}
	if n, _ := admitted(t, l, "c", other); n != 2 {
		t.Errorf("key c with burst 2: admitted %d, want 2", n)
	}
}

// testN: n greater than one.
func testN(t *testing.T, newLimiter NewLimiter) {
	l, _ := newLimiter(t)
	r := limit.Rule{Rate: 10, Burst: 10}
	start := time.Now()
	var got []limit.Decision
	for _, n := range []int{4, 4, 4, 2, 1} {
		got = append(got, allow(t, l, "k", r, n))
	}
	want := []limit.Decision{
		{Allowed: true, Remaining: 6}, {Allowed: true, Remaining: 2},
		{Allowed: false, Remaining: 2}, {Allowed: true, Remaining: 0}, {Allowed: false, Remaining: 0},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Duration) bool { return true })); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	retryAfterSince(t, got[2], 200*time.Millisecond, start) // 2 tokens missing
	retryAfterSince(t, got[4], 100*time.Millisecond, start)
}

// testReserve: reserve.
func testReserve(t *testing.T, newLimiter NewLimiter) {
	l, _ := newLimiter(t)
	r := limit.Rule{Rate: 10, Burst: 10, Reserve: 3}
	start := time.Now()
	n, d := admitted(t, l, "k", r)
	if n != 7 || d.Remaining != 3 {
		t.Errorf("reserve 3: admitted %d leaving %d, want 7 leaving 3", n, d.Remaining)
	}
	retryAfterSince(t, d, 100*time.Millisecond, start)
	r.Reserve = 0
	if n, _ := admitted(t, l, "k", r); n != 3 {
		t.Errorf("reserve 0 on the same bucket: admitted %d, want 3", n)
	}
}

// testInvalid: invalid.
func testInvalid(t *testing.T, newLimiter NewLimiter) {
	ctx := context.Background()
	l, _ := newLimiter(t)
	for _, tc := range []struct {
		name string
		r    limit.Rule
		n    int
	}{
		{"zero rate", limit.Rule{Burst: 1}, 1},
		{"zero burst", limit.Rule{Rate: 1}, 1},
		{"zero n", limit.Rule{Rate: 1, Burst: 1}, 0},
		{"n above burst", limit.Rule{Rate: 1, Burst: 3}, 4},
		{"n plus reserve above burst", limit.Rule{Rate: 1, Burst: 3, Reserve: 1}, 3},
	} {
		if _, err := l.Allow(ctx, "k", tc.r, tc.n); !errors.Is(err, limit.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, err)
		}
	}
}

// testConcurrent: concurrent admits exactly the burst.
func testConcurrent(t *testing.T, newLimiter NewLimiter) {
	ctx := context.Background()
	l, _ := newLimiter(t)
	r := limit.Rule{Rate: 0.001, Burst: 50} // no refill during the test
	var ok atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for range 20 {
				d, err := l.Allow(ctx, "k", r, 1)
				if err != nil {
					t.Errorf("goroutine %d: %v", g, err)
					return
				}
				if d.Allowed {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := ok.Load(); got != 50 {
		t.Errorf("16×20 concurrent calls admitted %d, want exactly the burst 50", got)
	}
}

// rule is the suite's usual rule: 10/s, a burst of 5.
var rule = limit.Rule{Rate: 10, Burst: 5}

// allow is l.Allow, failing the test on an error.
func allow(t *testing.T, l limit.Limiter, key string, r limit.Rule, n int) limit.Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), key, r, n)
	if err != nil {
		t.Fatalf("Allow(%q, %+v, %d): %v", key, r, n, err)
	}
	return d
}

// admitted takes single tokens until refused and returns how many were taken.
func admitted(t *testing.T, l limit.Limiter, key string, r limit.Rule) (int, limit.Decision) {
	t.Helper()
	for i := 0; ; i++ {
		if d := allow(t, l, key, r, 1); !d.Allowed {
			return i, d
		}
		if i > 10*r.Burst {
			t.Fatalf("key %q: more than %d admitted", key, 10*r.Burst)
		}
	}
}

// retryAfterSince checks that d's RetryAfter is at most full, the wait
// for the missing tokens, and short of it by no more than the time that
// has passed since start (the tokens that time refilled; the Redis
// limiters read the real clock).
func retryAfterSince(t *testing.T, d limit.Decision, full time.Duration, start time.Time) {
	t.Helper()
	retryAfterIn(t, d, full-time.Since(start), full)
}

// retryAfterIn checks that d's RetryAfter is in (lo, hi].
func retryAfterIn(t *testing.T, d limit.Decision, lo, hi time.Duration) {
	t.Helper()
	if d.RetryAfter <= lo || d.RetryAfter > hi {
		t.Errorf("RetryAfter = %v, want in (%v, %v]", d.RetryAfter, lo, hi)
	}
}
