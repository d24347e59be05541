package breaker

import (
	"testing"
	"time"
)

// TestTrialNow: evidence that the upstream is back ends the cool-down at
// once; the trial calls still decide, and a closed circuit is untouched.
func TestTrialNow(t *testing.T) {
	clock := newFakeClock()
	var changes []Change
	b := New("doubao", &Options{Now: clock.Now, OnStateChange: func(c Change) { changes = append(changes, c) }})
	if b.TrialNow() || b.State() != Closed {
		t.Fatalf("TrialNow on a closed circuit changed it: %v", b.State())
	}
	open(t, b)
	clock.Advance(time.Second) // 29s of cool-down left
	if !b.TrialNow() {
		t.Fatalf("TrialNow on an open circuit: reported not open")
	}
	if s := b.State(); s != HalfOpen {
		t.Fatalf("state %v, want half_open", s)
	}
	if last := changes[len(changes)-1]; last.From != Open || last.To != HalfOpen {
		t.Errorf("last change %+v, want open → half_open", last)
	}
	for range 3 {
		done, err := b.Allow()
		if err != nil {
			t.Fatalf("trial refused: %v", err)
		}
		done(Success)
	}
	if s := b.State(); s != Closed {
		t.Errorf("after 3 good trials: %v, want closed", s)
	}
}
