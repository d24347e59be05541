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

// TestTrialEvery: an open circuit turns half-open for a waiting caller's
// trial at most once an interval, and not before it has been open that
// long; TrialNow's other callers are not held to it.
func TestTrialEvery(t *testing.T) {
	now := time.Unix(0, 0)
	b := New("v", &Options{ConsecutiveFailures: 1, CoolDown: time.Hour, Now: func() time.Time { return now }})
	b.Trip()
	if b.TrialEvery(time.Second) {
		t.Fatal("a trial the moment the circuit opened")
	}
	now = now.Add(time.Second)
	if !b.TrialEvery(time.Second) || b.State() != HalfOpen {
		t.Fatalf("no trial a second after the circuit opened: %v", b.State())
	}
	// The trial fails: open again, with a longer cool-down.
	tk, err := b.Admit()
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(Failure)
	if b.State() != Open {
		t.Fatalf("after a failed trial: %v", b.State())
	}
	now = now.Add(999 * time.Millisecond)
	if b.TrialEvery(time.Second) {
		t.Fatal("a second trial within the interval")
	}
	now = now.Add(time.Millisecond)
	if !b.TrialEvery(time.Second) {
		t.Fatal("no trial an interval after the last")
	}
	tk, _ = b.Admit()
	tk.Done(Success)
}

// TestRampFloor: with a floor, a ramp admits a call whenever none was
// admitted for the floor, whatever its share.
func TestRampFloor(t *testing.T) {
	now := time.Unix(0, 0)
	r := NewRamp(&RampOptions{Steps: []float64{0.01, 1}, Interval: time.Hour, Floor: 100 * time.Millisecond, Now: func() time.Time { return now }})
	r.Start()
	if !r.Admit() {
		t.Fatal("the first call of a step is admitted")
	}
	admitted := 0
	for range 50 { // 50 calls 10ms apart: 500ms
		now = now.Add(10 * time.Millisecond)
		if r.Admit() {
			admitted++
		}
	}
	if admitted != 5 {
		t.Errorf("admitted %d of 50 calls over 500ms at a 1%% share with a 100ms floor, want 5", admitted)
	}
}
