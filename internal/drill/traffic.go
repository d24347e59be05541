package drill

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// traffic makes calls at a steady rate, each in its own goroutine, and
// counts them, apart for the calls made during a fault.
type traffic struct {
	calls, errs, during, duringOK atomic.Int64
	inFault                       atomic.Bool

	mu       sync.Mutex
	firstErr error
	faultLat []time.Duration // latencies of the calls made during the fault

	stopc chan struct{}
	done  chan struct{}
	once  sync.Once
}

// startTraffic calls fn rate times a second until stop.
func startTraffic(ctx context.Context, rate float64, fn func(ctx context.Context) error) *traffic {
	t := &traffic{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for {
			select {
			case <-t.stopc:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				inFault := t.inFault.Load()
				start := time.Now()
				err := fn(ctx)
				t.calls.Add(1)
				if inFault {
					t.during.Add(1)
					t.mu.Lock()
					t.faultLat = append(t.faultLat, time.Since(start))
					t.mu.Unlock()
				}
				if err != nil {
					t.errs.Add(1)
					t.mu.Lock()
					if t.firstErr == nil {
						t.firstErr = err
					}
					t.mu.Unlock()
					return
				}
				if inFault {
					t.duringOK.Add(1)
				}
			}()
		}
	}()
	return t
}

// stop ends the traffic and waits for the calls in flight.
func (t *traffic) stop() {
	t.once.Do(func() { close(t.stopc) })
	<-t.done
}

// err is the first error a call returned.
func (t *traffic) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.firstErr
}

// faultLatency returns the median and the slowest latency of the calls
// made during the fault.
func (t *traffic) faultLatency() (p50, worst time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.faultLat) == 0 {
		return 0, 0
	}
	l := slices.Clone(t.faultLat)
	slices.Sort(l)
	return l[len(l)/2], l[len(l)-1]
}
