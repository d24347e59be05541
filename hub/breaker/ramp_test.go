package breaker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// admitted makes n Admit calls and returns the 0-based positions admitted.
func admitted(r *Ramp, n int) []int {
	var out []int
	for i := range n {
		if r.Admit() {
			out = append(out, i)
		}
	}
	return out
}

func TestRampSteps(t *testing.T) {
	clock := newFakeClock()
	r := NewRamp(&RampOptions{Now: clock.Now})
	if got := len(admitted(r, 100)); got != 100 {
		t.Fatalf("before Start: %d of 100 admitted, want all", got)
	}
	r.Start()
	if diff := cmp.Diff([]int{0, 20, 40, 60, 80}, admitted(r, 100)); diff != "" {
		t.Errorf("5%% step positions (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		fraction float64
		want     int // of 1000
	}{
		{0.25, 250}, {0.5, 500}, {1, 1000},
	} {
		clock.Advance(30*time.Second - 1)
		if got := r.Step().Fraction; got == tc.fraction {
			t.Fatalf("stepped to %v before the interval", got)
		}
		clock.Advance(1)
		if got := r.Step().Fraction; got != tc.fraction {
			t.Fatalf("after 30s: fraction %v, want %v", got, tc.fraction)
		}
		if got := len(admitted(r, 1000)); got != tc.want {
			t.Errorf("at %v: %d of 1000 admitted, want %d", tc.fraction, got, tc.want)
		}
	}
	if s := r.Step(); !s.Done || s.Index != 3 || s.Steps != 4 {
		t.Errorf("after the last step: %+v, want done at index 3 of 4", s)
	}
}

func TestRampFailureDropsToFirstStep(t *testing.T) {
	clock := newFakeClock()
	r := NewRamp(&RampOptions{Now: clock.Now})
	r.Start()
	clock.Advance(70 * time.Second) // at 50%, 10s in
	if s := r.Step(); s.Fraction != 0.5 {
		t.Fatalf("after 70s: %+v, want 50%%", s)
	}
	r.Failure()
	want := RampStep{Index: 0, Steps: 4, Fraction: 0.05, Since: clock.Now()}
	if diff := cmp.Diff(want, r.Step()); diff != "" {
		t.Errorf("after a failure (-want +got):\n%s", diff)
	}
	if got := len(admitted(r, 40)); got != 2 {
		t.Errorf("after a failure: %d of 40 admitted, want 2", got)
	}
	// A failure after the ramp finished changes nothing.
	clock.Advance(90 * time.Second)
	r.Failure()
	if s := r.Step(); !s.Done {
		t.Errorf("failure after the ramp finished: %+v", s)
	}
}

// Any prefix of calls holds within one of the fraction.
func TestRampFractionExact(t *testing.T) {
	for _, f := range []float64{0.05, 0.1, 0.25, 1.0 / 3, 0.5, 0.9} {
		r := NewRamp(&RampOptions{Steps: []float64{f, 1}, Now: newFakeClock().Now})
		r.Start()
		n := 0
		for k := 1; k <= 10000; k++ {
			if r.Admit() {
				n++
			}
			if exp := f * float64(k); float64(n) < exp-1e-9 || float64(n) > exp+1 {
				t.Fatalf("fraction %v: %d admitted of %d, want within [%v, %v]", f, n, k, exp, exp+1)
			}
		}
	}
}

func TestRampConcurrent(t *testing.T) {
	r := NewRamp(&RampOptions{Steps: []float64{0.25, 1}, Now: newFakeClock().Now})
	r.Start()
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if r.Admit() {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := n.Load(); got != 2000 {
		t.Errorf("8000 concurrent calls at 25%%: %d admitted, want 2000", got)
	}
}

func TestRampBadSteps(t *testing.T) {
	for _, steps := range [][]float64{{}, {0.5}, {0, 1}, {0.5, 0.25, 1}, {0.5, 1.5}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewRamp(steps %v) did not panic", steps)
				}
			}()
			NewRamp(&RampOptions{Steps: steps})
		}()
	}
}

func TestHealth(t *testing.T) {
	clock := newFakeClock()
	var changes []HealthChange
	h := NewHealth("weather", &HealthOptions{Now: clock.Now, OnChange: func(c HealthChange) { changes = append(changes, c) }})
	down := errors.New("probe: tool weather.forecast: HTTP 503")

	h.Record(down)
	h.Record(down)
	if h.Ejected() || !h.Admit() {
		t.Fatal("ejected after 2 failures, want 3")
	}
	h.Record(nil) // resets the count
	h.Record(down)
	h.Record(down)
	if h.Ejected() {
		t.Fatal("a success did not reset the count")
	}
	h.Record(down)
	t0 := clock.Now()
	if !h.Ejected() || h.Admit() {
		t.Fatal("not ejected after 3 failures in a row")
	}
	snap := h.Snapshot()
	wantSnap := HealthSnapshot{
		Key: "weather", Ejected: true, ConsecutiveFailures: 3, EjectedAt: t0, LastProbe: t0,
		LastError: down.Error(), Ramp: RampStep{Index: 3, Steps: 4, Fraction: 1, Done: true},
	}
	if diff := cmp.Diff(wantSnap, snap); diff != "" {
		t.Errorf("ejected snapshot (-want +got):\n%s", diff)
	}

	clock.Advance(time.Minute)
	h.Record(nil)
	t1 := clock.Now()
	if h.Ejected() {
		t.Fatal("a successful probe did not re-admit")
	}
	if got := len(admitted(h.Ramp(), 100)); got != 5 {
		t.Errorf("re-admitted: %d of 100 admitted, want the ramp's 5", got)
	}
	wantChanges := []HealthChange{
		{Key: "weather", Ejected: true, At: t0, Err: down},
		{Key: "weather", Ejected: false, At: t1},
	}
	if diff := cmp.Diff(wantChanges, changes, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

func TestHealthManualEject(t *testing.T) {
	clock := newFakeClock()
	h := NewHealth("v", &HealthOptions{Now: clock.Now})
	h.Eject()
	h.Record(nil)
	if !h.Ejected() || !h.Snapshot().Manual {
		t.Fatal("a probe lifted an operator's ejection")
	}
	h.Readmit()
	if h.Ejected() || h.Snapshot().Ramp.Done {
		t.Errorf("after Readmit: ejected %v, ramp %+v; want admitted, ramping", h.Ejected(), h.Snapshot().Ramp)
	}
}

func TestRunProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		var deadlines []time.Duration
		p := ProberFunc(func(ctx context.Context) error {
			d, _ := ctx.Deadline()
			deadlines = append(deadlines, time.Until(d))
			if i := n.Add(1); i <= 3 {
				return errors.New("down")
			}
			return nil
		})
		h := NewHealth("v", nil) // time.Now is synctest's fake clock here
		ctx, cancel := context.WithCancel(t.Context())
		finished := make(chan struct{})
		go func() {
			RunProbes(ctx, 10*time.Second, p, h)
			close(finished)
		}()

		synctest.Wait() // the first probe runs at once
		if n.Load() != 1 {
			t.Fatalf("%d probes at start, want 1", n.Load())
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if n.Load() != 3 || !h.Ejected() {
			t.Fatalf("after 20s: %d probes, ejected %v; want 3, true", n.Load(), h.Ejected())
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if h.Ejected() {
			t.Fatal("not re-admitted after a successful probe")
		}
		cancel()
		<-finished
		if diff := cmp.Diff([]time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}, deadlines); diff != "" {
			t.Errorf("probe deadlines (-want +got):\n%s", diff)
		}
	})
}
