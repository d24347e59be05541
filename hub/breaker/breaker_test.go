package breaker

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/internal/x/clocktest"
)

// fakeClock is a settable clock (internal/x/clocktest).
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock { return clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

// call makes one call with the given outcome; it reports whether the breaker let it through.
func call(t *testing.T, b *Breaker, o Outcome) bool {
	t.Helper()
	done, err := b.Allow()
	if err != nil {
		if !errors.Is(err, ErrOpen) {
			t.Fatalf("Allow: %v, want nil or ErrOpen", err)
		}
		return false
	}
	done(o)
	return true
}

func calls(t *testing.T, b *Breaker, os ...Outcome) {
	t.Helper()
	for i, o := range os {
		if !call(t, b, o) {
			t.Fatalf("call %d (%v) refused in state %v", i, o, b.State())
		}
	}
}

func repeat(o Outcome, n int) []Outcome {
	out := make([]Outcome, n)
	for i := range out {
		out[i] = o
	}
	return out
}

// open trips b by consecutive failures.
func open(t *testing.T, b *Breaker) {
	t.Helper()
	calls(t, b, repeat(Failure, 5)...)
	if s := b.State(); s != Open {
		t.Fatalf("after 5 failures: %v, want open", s)
	}
}

func TestTransitions(t *testing.T) {
	type step struct {
		advance  time.Duration
		outcomes []Outcome
		want     State
	}
	alternate := func(n int) []Outcome { // S F S F …: half failures, never 2 in a row
		out := make([]Outcome, n)
		for i := range out {
			out[i] = Outcome(i % 2)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		opts  Options
		steps []step
	}{
		{"closed stays closed on successes", Options{}, []step{
			{0, repeat(Success, 100), Closed},
		}},
		{"closed to open on 5 consecutive failures", Options{}, []step{
			{0, repeat(Failure, 4), Closed},
			{0, repeat(Failure, 1), Open},
		}},
		{"a success resets the consecutive count", Options{}, []step{
			{0, []Outcome{Failure, Failure, Failure, Failure, Success, Failure, Failure, Failure, Failure}, Closed},
		}},
		{"closed to open on 50% of 20 calls", Options{}, []step{
			{0, alternate(19), Closed},
			{0, alternate(20)[19:], Open},
		}},
		{"45% of 20 calls stays closed", Options{ConsecutiveFailures: -1}, []step{
			{0, append(repeat(Failure, 9), repeat(Success, 11)...), Closed},
		}},
		{"50% of fewer than MinCalls stays closed", Options{ConsecutiveFailures: -1}, []step{
			{0, repeat(Failure, 19), Closed},
			{0, repeat(Failure, 1), Open},
		}},
		{"failures in the window count", Options{ConsecutiveFailures: -1}, []step{
			{0, repeat(Failure, 15), Closed},
			{9 * time.Second, append(repeat(Success, 4), Failure), Open},
		}},
		{"failures slide out of the window", Options{ConsecutiveFailures: -1}, []step{
			{0, repeat(Failure, 15), Closed},
			{10 * time.Second, append(repeat(Success, 4), Failure), Closed},
		}},
		{"ignored outcomes never trip", Options{}, []step{
			{0, repeat(Ignored, 100), Closed},
			{0, append(repeat(Failure, 4), append(repeat(Ignored, 10), Failure)...), Open},
		}},
		{"open to half-open after the cool-down", Options{}, []step{
			{0, repeat(Failure, 5), Open},
			{30*time.Second - 1, nil, Open},
			{1, nil, HalfOpen},
		}},
		{"half-open to closed after 3 successful trials", Options{}, []step{
			{0, repeat(Failure, 5), Open},
			{30 * time.Second, repeat(Success, 2), HalfOpen},
			{0, repeat(Success, 1), Closed},
		}},
		{"half-open to open on a failed trial", Options{}, []step{
			{0, repeat(Failure, 5), Open},
			{30 * time.Second, []Outcome{Success, Failure}, Open},
		}},
		{"ignored trials decide nothing", Options{}, []step{
			{0, repeat(Failure, 5), Open},
			{30 * time.Second, append(repeat(Ignored, 10), Success, Success), HalfOpen},
			{0, []Outcome{Success}, Closed},
		}},
		{"custom trials", Options{Trials: 1}, []step{
			{0, repeat(Failure, 5), Open},
			{30 * time.Second, []Outcome{Success}, Closed},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			tc.opts.Now = clock.Now
			b := New("v", &tc.opts)
			for i, s := range tc.steps {
				clock.Advance(s.advance)
				calls(t, b, s.outcomes...)
				if got := b.State(); got != s.want {
					t.Fatalf("step %d: state %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

func TestOpenRefusesWithWait(t *testing.T) {
	clock := newFakeClock()
	b := New("weather", &Options{Now: clock.Now})
	open(t, b)
	clock.Advance(12 * time.Second)
	_, err := b.Allow()
	var oe *OpenError
	if !errors.As(err, &oe) || !errors.Is(err, ErrOpen) {
		t.Fatalf("Allow while open: %v, want *OpenError matching ErrOpen", err)
	}
	want := &OpenError{Key: "weather", State: Open, Wait: 18 * time.Second}
	if diff := cmp.Diff(want, oe); diff != "" {
		t.Errorf("OpenError (-want +got):\n%s", diff)
	}
	if oe.RetryAfter() != 18*time.Second {
		t.Errorf("RetryAfter() = %v", oe.RetryAfter())
	}
	if got := err.Error(); got != `breaker: circuit open: "weather": retry in 18s` {
		t.Errorf("Error() = %q", got)
	}
}

func TestHalfOpenAdmitsOnlyTrials(t *testing.T) {
	clock := newFakeClock()
	b := New("v", &Options{Now: clock.Now})
	open(t, b)
	clock.Advance(30 * time.Second)

	// Trials are counted while in flight, not only when done.
	var dones []func(Outcome)
	for i := range 3 {
		done, err := b.Allow()
		if err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
		dones = append(dones, done)
	}
	_, err := b.Allow()
	var oe *OpenError
	if !errors.As(err, &oe) || oe.State != HalfOpen || oe.Wait != 0 {
		t.Fatalf("4th call while 3 trials in flight: %v, want a half-open OpenError", err)
	}
	// An ignored trial frees its slot.
	dones[0](Ignored)
	done, err := b.Allow()
	if err != nil {
		t.Fatalf("after an ignored trial: %v", err)
	}
	dones[0] = done
	for _, d := range dones {
		d(Success)
	}
	if s := b.State(); s != Closed {
		t.Errorf("after 3 successful trials: %v", s)
	}
}

func TestHalfOpenConcurrentTrials(t *testing.T) {
	clock := newFakeClock()
	b := New("v", &Options{Now: clock.Now})
	open(t, b)
	clock.Advance(30 * time.Second)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 64 {
		wg.Go(func() {
			<-start
			if _, err := b.Allow(); err == nil {
				admitted.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := admitted.Load(); got != 3 {
		t.Errorf("64 concurrent calls in half-open: %d admitted, want 3", got)
	}
}

func TestCoolDownGrowth(t *testing.T) {
	clock := newFakeClock()
	b := New("v", &Options{Now: clock.Now})
	open(t, b)
	var got []time.Duration
	for range 5 {
		s := b.Snapshot()
		got = append(got, s.CoolDown)
		clock.Advance(s.CoolDown)
		calls(t, b, Failure) // the trial fails
	}
	want := []time.Duration{30 * time.Second, 60 * time.Second, 120 * time.Second, 120 * time.Second, 120 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cool-downs (-want +got):\n%s", diff)
	}
}

func TestCoolDownResetsAfterHealthyPeriod(t *testing.T) {
	clock := newFakeClock()
	b := New("v", &Options{Now: clock.Now})
	reopen := func() time.Duration {
		t.Helper()
		clock.Advance(b.Snapshot().CoolDown)
		calls(t, b, repeat(Success, 3)...) // trials close it
		calls(t, b, repeat(Failure, 5)...)
		return b.Snapshot().CoolDown
	}
	open(t, b)
	if got := reopen(); got != 60*time.Second {
		t.Fatalf("second trip right after closing: %v, want 60s", got)
	}
	// Closed, then healthy for HealthyAfter: the next trip starts over.
	clock.Advance(b.Snapshot().CoolDown)
	calls(t, b, repeat(Success, 3)...)
	clock.Advance(5*time.Minute - 1)
	if s := b.Snapshot(); s.Trips != 2 {
		t.Errorf("just before HealthyAfter: trips %d, want 2", s.Trips)
	}
	clock.Advance(1)
	if s := b.Snapshot(); s.Trips != 0 || s.CoolDown != 30*time.Second {
		t.Errorf("after HealthyAfter: trips %d cool-down %v, want 0, 30s", s.Trips, s.CoolDown)
	}
	calls(t, b, repeat(Failure, 5)...)
	if s := b.Snapshot(); s.CoolDown != 30*time.Second || s.Trips != 1 {
		t.Errorf("trip after a healthy period: cool-down %v trips %d, want 30s, 1", s.CoolDown, s.Trips)
	}
}

// An outcome reported after the state changed belongs to the old state.
func TestStaleOutcomeDropped(t *testing.T) {
	clock := newFakeClock()
	b := New("v", &Options{Now: clock.Now})
	slow, err := b.Allow() // admitted while closed
	if err != nil {
		t.Fatal(err)
	}
	open(t, b)
	clock.Advance(30 * time.Second)
	calls(t, b, Success, Success)
	slow(Failure) // would reopen if counted as a trial
	calls(t, b, Success)
	if s := b.State(); s != Closed {
		t.Errorf("state %v, want closed: a stale failure counted", s)
	}
}

func TestDoneTwiceCountsOnce(t *testing.T) {
	clock := newFakeClock()
	b := New("v", &Options{Now: clock.Now})
	done, _ := b.Allow()
	for range 10 {
		done(Failure)
	}
	if s := b.Snapshot(); s.Calls != 1 || s.Failures != 1 || s.State != Closed {
		t.Errorf("snapshot %+v, want one failed call, closed", s)
	}
}

func TestStateChangesAndSnapshot(t *testing.T) {
	clock := newFakeClock()
	var got []Change
	b := New("weather", &Options{Now: clock.Now, OnStateChange: func(c Change) { got = append(got, c) }})
	t0 := clock.Now()
	calls(t, b, Success, Failure, Failure)
	s := b.Snapshot()
	doneRamp := RampStep{Index: 3, Steps: 4, Fraction: 1, Done: true}
	want := Snapshot{Key: "weather", State: Closed, Calls: 3, Failures: 2, ConsecutiveFailures: 2, CoolDown: 30 * time.Second, Ramp: doneRamp}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("closed snapshot (-want +got):\n%s", diff)
	}
	calls(t, b, Failure, Failure, Failure)
	clock.Advance(10 * time.Second)
	s = b.Snapshot()
	want = Snapshot{Key: "weather", State: Open, OpenedAt: t0, CoolDown: 30 * time.Second, RetryIn: 20 * time.Second, Trips: 1, Ramp: doneRamp}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("open snapshot (-want +got):\n%s", diff)
	}
	clock.Advance(20 * time.Second)
	calls(t, b, Success)
	t1 := clock.Now()
	s = b.Snapshot()
	want = Snapshot{Key: "weather", State: HalfOpen, OpenedAt: t0, CoolDown: 30 * time.Second, Trips: 1, TrialsSucceeded: 1, Ramp: doneRamp}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("half-open snapshot (-want +got):\n%s", diff)
	}
	calls(t, b, Success, Success)

	wantChanges := []Change{
		{Key: "weather", From: Closed, To: Open, At: t0, CoolDown: 30 * time.Second, Trips: 1},
		{Key: "weather", From: Open, To: HalfOpen, At: t1, Trips: 1},
		{Key: "weather", From: HalfOpen, To: Closed, At: t1, Trips: 1},
	}
	if diff := cmp.Diff(wantChanges, got); diff != "" {
		t.Errorf("state changes (-want +got):\n%s", diff)
	}
}

func TestBreakerRamp(t *testing.T) {
	clock := newFakeClock()
	b := New("v", &Options{Now: clock.Now})
	if !b.Ramp().Step().Done {
		t.Fatal("a new breaker is ramping")
	}
	open(t, b)
	clock.Advance(30 * time.Second)
	calls(t, b, Success, Success, Success)
	if s := b.Snapshot(); s.State != Closed || s.Ramp.Fraction != 0.05 {
		t.Fatalf("closed after a trip: %v at ramp %+v, want ramping at 5%%", s.State, s.Ramp)
	}
	clock.Advance(30 * time.Second)
	if f := b.Ramp().Step().Fraction; f != 0.25 {
		t.Fatalf("30s later: ramp at %v, want 0.25", f)
	}
	calls(t, b, Failure) // one failure: not enough to trip, enough to restart the ramp
	if s := b.Snapshot(); s.State != Closed || s.Ramp.Fraction != 0.05 {
		t.Errorf("after a failure while ramping: %v at %+v, want closed at 5%%", s.State, s.Ramp)
	}
	clock.Advance(90 * time.Second)
	if !b.Ramp().Step().Done {
		t.Errorf("ramp not done after 3 steps of 30s: %+v", b.Ramp().Step())
	}
}

func TestTripAndReset(t *testing.T) {
	clock := newFakeClock()
	b := New("v", &Options{Now: clock.Now})
	b.Trip()
	if s := b.Snapshot(); s.State != Open || s.CoolDown != 30*time.Second {
		t.Errorf("after Trip: %+v", s)
	}
	b.Trip()
	if s := b.Snapshot(); s.CoolDown != 60*time.Second {
		t.Errorf("after a second Trip: cool-down %v, want 60s", s.CoolDown)
	}
	b.Reset()
	if s := b.Snapshot(); s.State != Closed || s.Trips != 0 || s.CoolDown != 30*time.Second {
		t.Errorf("after Reset: %+v", s)
	}
	calls(t, b, Success)
}

// Many goroutines through trips and recoveries, for the race detector; at
// the end no trial is left counted in flight.
func TestConcurrentUse(t *testing.T) {
	clock := newFakeClock()
	var changes atomic.Int64
	b := New("v", &Options{
		Now: clock.Now, CoolDown: time.Millisecond, MaxCoolDown: time.Millisecond,
		OnStateChange: func(Change) { changes.Add(1) },
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				if i%50 == 0 {
					clock.Advance(time.Millisecond)
				}
				done, err := b.Allow()
				if err != nil {
					continue
				}
				done(Outcome((g + i) % 3))
			}
		})
	}
	wg.Wait()
	s := b.Snapshot()
	if s.TrialsInFlight != 0 {
		t.Errorf("TrialsInFlight = %d after every call ended, want 0", s.TrialsInFlight)
	}
	if changes.Load() == 0 {
		t.Error("no state change: the test did not exercise trips")
	}
	t.Logf("%d state changes", changes.Load())
}

func TestSet(t *testing.T) {
	s := NewSet(func(key string) *Options {
		if key == "weather/forecast" {
			return &Options{ConsecutiveFailures: 1}
		}
		return nil
	})
	if first, again := s.Get("weather"), s.Get("weather"); first != again {
		t.Error("Get returned two breakers for one key")
	}
	calls(t, s.Get("weather/forecast"), Failure)
	calls(t, s.Get("maps"), Failure)
	var got []string
	for _, snap := range s.Snapshots() {
		got = append(got, snap.Key+"="+snap.State.String())
	}
	want := []string{"maps=closed", "weather=closed", "weather/forecast=open"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshots (-want +got):\n%s", diff)
	}
	s.Delete("maps")
	if n := len(s.Snapshots()); n != 2 {
		t.Errorf("%d breakers after Delete, want 2", n)
	}
}

func BenchmarkBreakerAllow(b *testing.B) {
	br := New("v", nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			done, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			done(Success)
		}
	})
}

// TestAdmitTicket: Admit and Ticket.Done count like Allow and done.
func TestAdmitTicket(t *testing.T) {
	b := New("v", &Options{MinCalls: 2, FailureRatio: 0.5, Now: newFakeClock().Now})
	for range 2 {
		tk, err := b.Admit()
		if err != nil {
			t.Fatal(err)
		}
		tk.Done(Failure)
	}
	if _, err := b.Admit(); err == nil {
		t.Fatalf("after 2 failures of 2: Admit let a call through; state %v", b.State())
	}
}
