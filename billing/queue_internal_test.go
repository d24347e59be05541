package billing

import (
	"strconv"
	"testing"
)

// TestQueueOrderAndBound: events come out in the order they went in,
// across blocks and partial takes, no more than limit are held, and the
// ready token stays while events are left.
func TestQueueOrderAndBound(t *testing.T) {
	q := queue{limit: 1000, ready: make(chan struct{}, 1)}
	next, want := 0, 0
	push := func(k int) {
		t.Helper()
		for range k {
			if _, ok := q.push(Event{Key: strconv.Itoa(next)}); !ok {
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
			if ev.Key != strconv.Itoa(want) {
				t.Fatalf("took %s, want %d", ev.Key, want)
			}
			want++
		}
	}
	push(700)
	take(300) // 400 left: the token stays
	push(600)
	if n, ok := q.push(Event{Key: "over"}); ok || n != 1000 {
		t.Fatalf("push past the limit: %d, %v", n, ok)
	}
	take(450)
	push(100)
	take(2000)
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

// TestQueueHoldsWhatIsQueued: the blocks a burst needed go once the
// writer has taken their events, but for one kept for the next.
func TestQueueHoldsWhatIsQueued(t *testing.T) {
	q := queue{limit: 65536, ready: make(chan struct{}, 1)}
	for range 20 * queueBlock {
		q.push(Event{})
	}
	if len(q.blocks) != 20 {
		t.Fatalf("%d events in %d blocks", q.n, len(q.blocks))
	}
	for q.len() > 0 {
		q.take(nil, 1000)
	}
	held := cap(q.spare)
	for _, b := range q.blocks {
		held += cap(b)
	}
	if held > 2*queueBlock {
		t.Errorf("an empty queue holds %d slots", held)
	}
}
