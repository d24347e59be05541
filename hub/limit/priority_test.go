package limit

import (
	"context"
	"testing"
)

func TestPriorityReserve(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Priority
		r    Rule
		n    int
		c    Class
		want int
	}{
		{"interactive retry", Priority{}, Rule{Burst: 10}, 1, Class{Retry: true}, 0},
		{"interactive first", Priority{}, Rule{Burst: 10}, 1, Class{}, 3},
		{"batch retry", Priority{}, Rule{Burst: 10}, 1, Class{Batch: true, Retry: true}, 4},
		{"batch first", Priority{}, Rule{Burst: 10}, 1, Class{Batch: true}, 7},
		{"rounds down", Priority{}, Rule{Burst: 3}, 1, Class{}, 0},
		{"custom shares", Priority{Headroom: 0.5, BatchShare: 0.25}, Rule{Burst: 100}, 1, Class{Batch: true}, 75},
		{"no headroom, batch retry", Priority{Headroom: -1}, Rule{Burst: 10}, 1, Class{Batch: true, Retry: true}, 4},
		{"no headroom", Priority{Headroom: -1}, Rule{Burst: 10}, 1, Class{}, 0},
		{"no batch share", Priority{BatchShare: -1}, Rule{Burst: 10}, 1, Class{Batch: true}, 3},
		{"lowered so a full bucket admits n", Priority{}, Rule{Burst: 10}, 8, Class{Batch: true}, 2},
		{"interactive first, large n", Priority{}, Rule{Burst: 10}, 7, Class{}, 3},
		{"ignores the rule's reserve", Priority{}, Rule{Burst: 10, Reserve: 9}, 1, Class{Retry: true}, 0},
	} {
		if got := tc.p.Reserve(tc.r, tc.n, tc.c); got != tc.want {
			t.Errorf("%s: Reserve = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// On one saturating bucket, batch is refused first, then interactive first
// attempts, and retries may use the headroom to the last token.
func TestPriorityOrderNearSaturation(t *testing.T) {
	clock := newFakeClock()
	p := Priority{Limiter: NewLocal(&LocalOptions{Now: clock.Now})}
	rule := Rule{Rate: 1, Burst: 10}
	ctx := context.Background()
	take := func(c Class) int {
		n := 0
		for {
			d, err := p.Allow(ctx, "vendor", rule, 1, c)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Allowed {
				return n
			}
			n++
		}
	}
	batch, interactive, retry := Class{Batch: true}, Class{}, Class{Retry: true}
	steps := []struct {
		c    Class
		want int
	}{
		{batch, 3},                           // leaves 7
		{Class{Batch: true, Retry: true}, 3}, // leaves 4
		{interactive, 1},                     // leaves the headroom, 3
		{batch, 0},
		{Class{Batch: true, Retry: true}, 0},
		{interactive, 0},
		{retry, 3}, // empty
		{retry, 0},
	}
	for i, s := range steps {
		if got := take(s.c); got != s.want {
			t.Errorf("step %d %+v: admitted %d, want %d", i, s.c, got, s.want)
		}
	}
}
