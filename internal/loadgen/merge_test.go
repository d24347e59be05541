package loadgen

import (
	"testing"
	"time"
)

// Merge adds calls and time up and takes the percentiles over every run's
// latencies, not an average of the runs' percentiles.
func TestMerge(t *testing.T) {
	ms := func(ds ...int) []time.Duration {
		out := make([]time.Duration, len(ds))
		for i, d := range ds {
			out[i] = time.Duration(d) * time.Millisecond
		}
		return out
	}
	a := Result{Calls: 4, Errors: 1, Elapsed: time.Second, Latencies: ms(1, 1, 1, 1)}
	b := Result{Calls: 6, Elapsed: time.Second, Latencies: ms(2, 3, 4, 5, 6, 100)}
	m := Merge("p", a, b)
	if m.Name != "p" || m.Calls != 10 || m.Errors != 1 || m.Elapsed != 2*time.Second || m.PerSec != 5 {
		t.Errorf("merged %+v; want 10 calls, 1 error, 2s, 5 calls/s", m)
	}
	if m.P50 != 3*time.Millisecond || m.P99 != 100*time.Millisecond {
		t.Errorf("p50 %v, p99 %v; want 3ms and 100ms (over all ten latencies)", m.P50, m.P99)
	}
	if z := Merge("none"); z.Calls != 0 || z.PerSec != 0 || z.P50 != 0 {
		t.Errorf("Merge of nothing: %+v", z)
	}
}
