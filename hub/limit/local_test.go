package limit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// Buckets that have refilled are dropped on the next sweep; others are kept.
func TestLocalEvictsFullBuckets(t *testing.T) {
	clock := newFakeClock()
	l := NewLocal(&LocalOptions{Now: clock.Now, SweepEvery: time.Minute})
	ctx := context.Background()
	fast := Rule{Rate: 10, Burst: 5}    // full again after 0.5s
	slow := Rule{Rate: 0.001, Burst: 5} // full again after 1000s
	for i := range 1000 {
		if _, err := l.Allow(ctx, fmt.Sprint("fast", i), fast, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Allow(ctx, "slow", slow, 1); err != nil {
		t.Fatal(err)
	}
	if got := l.Len(); got != 1001 {
		t.Fatalf("Len = %d, want 1001", got)
	}
	clock.Advance(2 * time.Minute)
	// Touch every shard (1000 keys over 64 shards) so each sweeps.
	for i := range 1000 {
		if _, err := l.Allow(ctx, fmt.Sprint("probe", i), Rule{Rate: 1000, Burst: 1}, 1); err != nil {
			t.Fatal(err)
		}
	}
	var fastLeft, slowLeft int
	for i := range l.shards {
		for k := range l.shards[i].buckets {
			switch {
			case strings.HasPrefix(k, "fast"):
				fastLeft++
			case k == "slow":
				slowLeft++
			}
		}
	}
	if fastLeft != 0 || slowLeft != 1 {
		t.Errorf("after a sweep: %d refilled buckets kept, want 0; slow bucket kept %d, want 1", fastLeft, slowLeft)
	}
	d, err := l.Allow(ctx, "slow", slow, 5)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed {
		t.Error("the slow bucket was dropped before it refilled: a fresh burst was granted")
	}
}

func TestLocalRuleChange(t *testing.T) {
	clock := newFakeClock()
	l := NewLocal(&LocalOptions{Now: clock.Now})
	ctx := context.Background()
	for range 5 {
		l.Allow(ctx, "k", Rule{Rate: 1, Burst: 5}, 1)
	}
	clock.Advance(time.Second)
	// Tenfold rate from now on: one token was earned at the old rate.
	d, _ := l.Allow(ctx, "k", Rule{Rate: 10, Burst: 5}, 1)
	if !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after rule change: %+v", d)
	}
	clock.Advance(200 * time.Millisecond)
	if d, _ := l.Allow(ctx, "k", Rule{Rate: 10, Burst: 5}, 2); !d.Allowed {
		t.Errorf("200ms at 10/s should give 2 tokens: %+v", d)
	}
}

// TestLocalActsAsRateLimiter: Local's buckets decide what the
// golang.org/x/time/rate Limiter it used to hold decides (rateAllow,
// below, is that Allow), call for call, on a random walk of times
// (forward, and now and then backward), token counts, reserves and rule
// changes, over keys that share shards.
func TestLocalActsAsRateLimiter(t *testing.T) {
	clock := newFakeClock()
	l := NewLocal(&LocalOptions{Now: clock.Now, SweepEvery: time.Hour})
	ref := map[string]*rateBucket{}
	rnd := rand.New(rand.NewPCG(1, 2))
	rules := []Rule{{Rate: 10, Burst: 5}, {Rate: 0.5, Burst: 3}, {Rate: 1000, Burst: 100}, {Rate: 3.3, Burst: 7}}
	ctx := context.Background()
	for i := range 20000 {
		switch k := rnd.IntN(10); {
		case k < 7:
			clock.Advance(time.Duration(rnd.Int64N(int64(300 * time.Millisecond))))
		case k == 7:
			clock.Advance(-time.Duration(rnd.Int64N(int64(50 * time.Millisecond))))
		}
		key := fmt.Sprint("k", rnd.IntN(6))
		r := rules[(rnd.IntN(40)+len(key))%len(rules)] // mostly one rule a key, sometimes a change
		r.Reserve = rnd.IntN(2)
		n := 1 + rnd.IntN(r.Burst-r.Reserve)
		got, err := l.Allow(ctx, key, r, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := rateAllow(ref, clock.Now(), key, r, n); got != want {
			t.Fatalf("call %d (%s, %+v, n %d): got %+v, want %+v", i, key, r, n, got, want)
		}
	}
}

type rateBucket struct {
	lim   *rate.Limiter
	rate  float64
	burst int
}

// rateAllow is Local.Allow as it was on rate.Limiter (without the sweep).
func rateAllow(buckets map[string]*rateBucket, now time.Time, key string, r Rule, n int) Decision {
	b := buckets[key]
	switch {
	case b == nil:
		b = &rateBucket{lim: rate.NewLimiter(rate.Limit(r.Rate), r.Burst), rate: r.Rate, burst: r.Burst}
		buckets[key] = b
	case b.rate != r.Rate || b.burst != r.Burst:
		b.lim.SetLimitAt(now, rate.Limit(r.Rate))
		b.lim.SetBurstAt(now, r.Burst)
		b.rate, b.burst = r.Rate, r.Burst
	}
	tokens := b.lim.TokensAt(now)
	if need := float64(n + r.Reserve); tokens >= need && b.lim.AllowN(now, n) {
		return Decision{Allowed: true, Remaining: wholeTokens(tokens - float64(n))}
	}
	need := float64(n + r.Reserve)
	return Decision{RetryAfter: durationForTokens(need-tokens, r.Rate), Remaining: wholeTokens(tokens)}
}
