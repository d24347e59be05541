// Package gcfloor keeps a floor under the garbage collector's heap goal:
// the heap may grow by at least a fixed headroom over the live heap before
// the next collection, instead of only by GOGC percent of it.
//
// A hub's live heap is small (about 5 MB on the hop bench) while it
// allocates ~13 KB per call, so with the default GOGC=100 it collected
// every ~4 MB allocated: 12 collections a second at 3,500 calls/s, each
// with its fixed costs (background mark workers woken on the hub's core,
// write barriers on, sweeping). Raising GOGC alone would multiply a large
// live heap too (1,000 open sessions), so the percent follows the live
// heap after each collection: max(GOGC, headroom ÷ live × 100), which is
// GOGC again once the live heap outgrows the headroom.
//
//	stop := gcfloor.Start(32 << 20)
//	defer stop()
//
// GOMEMLIMIT still bounds the heap as usual. The caller decides whether to
// use it at all: toolhub serve starts it unless GOGC is set.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// minLive is the smallest live heap the percent is computed for: the
// runtime's own heap minimum (4 MiB at GOGC=100) scales with the percent,
// so a nearly empty heap (a hub just started) gets a goal of about
// headroom, not more.
const minLive = 4 << 20

const (
	metricLive = "/gc/heap/live:bytes"
	metricGOGC = "/gc/gogc:percent"
)

// tuner sets the GC percent after each collection.
type tuner struct {
	headroom uint64
	base     int // the percent at Start: GOGC, or 100

	mu      sync.Mutex
	set     int // the percent last set
	stopped bool
	sample  []metrics.Sample
}

// sentinel is allocated to learn of a collection: its cleanup runs once
// a collection has found it unreachable. It is 32 bytes so that it is not
// a tiny allocation (a tiny block is freed only with its neighbours).
type sentinel [4]uint64

// Start keeps the heap goal at least headroom bytes over the live heap
// until stop is called, which sets the percent back to what it was.
// It does nothing (stop included) when headroom is not positive or the
// collector is off (GOGC=off).
func Start(headroom int64) (stop func()) {
	base := Percent()
	if headroom <= 0 || base < 0 {
		return func() {}
	}
	t := &tuner{headroom: uint64(headroom), base: base, set: base,
		sample: []metrics.Sample{{Name: metricLive}}}
	t.adjust()
	t.arm()
	return t.stop
}

// Percent is the garbage collector's current percent (GOGC); negative
// when it is off.
func Percent() int {
	s := []metrics.Sample{{Name: metricGOGC}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	v := s[0].Value.Uint64()
	if v > 1<<31 { // GOGC=off: -1, read as a uint64
		return -1
	}
	return int(v)
}

// arm allocates a sentinel whose cleanup adjusts the percent and arms
// again, so that the percent follows every collection.
func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) {
		if t.adjust() {
			t.arm()
		}
	}, t)
}

// percent is the GC percent for a live heap of live bytes.
func (t *tuner) percent(live uint64) int {
	if q := t.headroom * 100 / max(live, minLive); q > uint64(t.base) {
		return int(q)
	}
	return t.base
}

// adjust sets the percent for the live heap now; it reports false once
// stopped.
func (t *tuner) adjust() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	if p := t.percent(live); p != t.set {
		debug.SetGCPercent(p)
		t.set = p
	}
	return true
}

func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.stopped = true
	if t.set != t.base {
		debug.SetGCPercent(t.base)
	}
}
