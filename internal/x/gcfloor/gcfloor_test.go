package gcfloor

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPercentForLiveHeap(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name           string
		headroom, live uint64
		base, want     int
	}{
		{"nothing live yet: the goal is about the headroom", 32 * mib, 0, 100, 800},
		{"below the runtime's heap minimum", 32 * mib, 1 * mib, 100, 800},
		{"small live heap", 32 * mib, 8 * mib, 100, 400},
		{"live heap as large as the headroom", 32 * mib, 32 * mib, 100, 100},
		{"live heap past the headroom: GOGC", 32 * mib, 200 * mib, 100, 100},
		{"a higher GOGC is kept", 32 * mib, 16 * mib, 300, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tu := &tuner{headroom: tc.headroom, base: tc.base}
			if got := tu.percent(tc.live); got != tc.want {
				t.Errorf("percent(%d MiB live) = %d, want %d", tc.live/mib, got, tc.want)
			}
		})
	}
}

// gcUntil collects until the GC percent is want; the tuner adjusts it in a
// cleanup, which runs on its own goroutine after a collection.
func gcUntil(t *testing.T, want func(int) bool, what string) {
	t.Helper()
	for i := 0; !want(Percent()); i++ {
		if i == 1000 {
			t.Fatalf("after 1000 collections the GC percent is %d, want %s", Percent(), what)
		}
		runtime.GC()
		runtime.Gosched()
	}
}

func TestStartFollowsTheLiveHeap(t *testing.T) {
	base := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(base) })
	const headroom = 8 << 20

	stop := Start(headroom)
	// The test binary's live heap is a few MiB: Start already raised it.
	if p := Percent(); p <= 100 {
		t.Fatalf("after Start the GC percent is %d, want > 100", p)
	}

	// A live heap four times the headroom: back to GOGC.
	keep := make([][]byte, 32)
	for i := range keep {
		keep[i] = make([]byte, 1<<20)
	}
	gcUntil(t, func(p int) bool { return p == 100 }, "100 (the live heap outgrew the headroom)")

	clear(keep)
	gcUntil(t, func(p int) bool { return p > 100 }, "> 100 (the live heap is small again)")

	stop()
	if p := Percent(); p != 100 {
		t.Fatalf("after stop the GC percent is %d, want 100", p)
	}
	for range 3 {
		runtime.GC()
		runtime.Gosched()
	}
	if p := Percent(); p != 100 {
		t.Fatalf("collections after stop set the GC percent to %d, want it left at 100", p)
	}
	stop() // a second stop changes nothing
}

func TestStartLeavesGCOffAlone(t *testing.T) {
	base := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(base) })
	if p := Percent(); p != -1 {
		t.Fatalf("GOGC=off reads as %d, want -1", p)
	}
	stop := Start(32 << 20)
	if p := Percent(); p != -1 {
		t.Errorf("Start with the collector off set the percent to %d", p)
	}
	stop()
	if p := Percent(); p != -1 {
		t.Errorf("stop with the collector off set the percent to %d", p)
	}
}
