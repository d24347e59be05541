package billing

import (
	"fmt"
	"testing"
)

// TestQueueOrderAndBound: events come out in the order they went in across
// partial takes and the compaction that reuses taken slots, no more than
// limit are held, and the ready token stays while events are left.
func TestQueueOrderAndBound(t *testing.T) {
	q := queue{limit: 10, ready: make(chan struct{}, 1)}
	next, want := 0, 0
	push := func(k int) {
		t.Helper()
		for range k {
			if _, ok := q.push(Event{Key: fmt.Sprint(next)}); !ok {
				t.Fatalf("push %d refused with %d queued", next, q.len())
			}
			next++
		}
	}
	take := func(max int) {
		t.Helper()
		select {
		case <-q.ready:
		default:
			t.Fatalf("%d queued but no ready token", q.len())
		}
		for _, ev := range q.take(nil, max) {
			if ev.Key != fmt.Sprint(want) {
				t.Fatalf("took %s, want %d", ev.Key, want)
			}
			want++
		}
	}
	push(7)
	take(3) // 4 left: the token stays
	push(6)
	if n, ok := q.push(Event{Key: "over"}); ok || n != 10 {
		t.Fatalf("push past the limit: %d, %v", n, ok)
	}
	take(4)
	push(4) // fills the slice again: the taken front is reused
	if cap(q.evs) > 2*q.limit {
		t.Errorf("the queue grew to %d slots holding at most 10", cap(q.evs))
	}
	take(100)
	if want != next || q.len() != 0 {
		t.Fatalf("took %d of %d, %d left", want, next, q.len())
	}
	select {
	case <-q.ready:
		t.Fatal("a ready token with nothing queued")
	default:
	}
	push(1)
	take(1)
}

// TestQueueGivesBackABurst: a queue that grew past queueKeep lets its
// slots go once emptied.
func TestQueueGivesBackABurst(t *testing.T) {
	q := queue{limit: 4 * queueKeep, ready: make(chan struct{}, 1)}
	for range 2 * queueKeep {
		q.push(Event{})
	}
	q.take(nil, 4*queueKeep)
	if cap(q.evs) != 0 {
		t.Errorf("an empty queue kept %d slots", cap(q.evs))
	}
}
