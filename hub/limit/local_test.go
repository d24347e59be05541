package limit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
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
