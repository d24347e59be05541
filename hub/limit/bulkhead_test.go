package limit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestBulkhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b := NewBulkhead(2)
		r1, err1 := b.Acquire(ctx, 0)
		r2, err2 := b.Acquire(ctx, 0)
		if err1 != nil || err2 != nil {
			t.Fatalf("first two: %v, %v", err1, err2)
		}
		if _, err := b.Acquire(ctx, 0); !errors.Is(err, ErrOverloaded) {
			t.Errorf("third without wait: %v, want ErrOverloaded", err)
		}
		start := time.Now()
		if _, err := b.Acquire(ctx, 50*time.Millisecond); !errors.Is(err, ErrOverloaded) {
			t.Errorf("third with wait: %v, want ErrOverloaded", err)
		}
		if waited := time.Since(start); waited != 50*time.Millisecond {
			t.Errorf("waited %v, want exactly maxWait 50ms", waited)
		}

		// A slot released during the wait is taken.
		go func() {
			time.Sleep(10 * time.Millisecond)
			r1()
		}()
		r3, err := b.Acquire(ctx, 50*time.Millisecond)
		if err != nil {
			t.Fatalf("slot freed during the wait: %v", err)
		}
		if b.InFlight() != 2 || b.Waiting() != 0 {
			t.Errorf("InFlight %d Waiting %d, want 2, 0", b.InFlight(), b.Waiting())
		}

		// release is idempotent.
		r2()
		r2()
		if b.InFlight() != 1 {
			t.Errorf("after double release: InFlight %d, want 1", b.InFlight())
		}
		r3()

		// The caller's context wins over maxWait.
		hold, _ := b.Acquire(ctx, 0)
		hold2, _ := b.Acquire(ctx, 0)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer cancel()
		if _, err := b.Acquire(cctx, time.Second); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ctx done while waiting: %v, want DeadlineExceeded", err)
		}
		hold()
		hold2()
		synctest.Wait() // every goroutine started here has ended: nothing leaked
	})
}

func TestBulkheadConcurrent(t *testing.T) {
	b := NewBulkhead(3)
	var inside, peak atomic.Int64
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 100 {
				release, err := b.Acquire(context.Background(), time.Millisecond)
				if err != nil {
					refused.Add(1)
					continue
				}
				admitted.Add(1)
				n := inside.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				inside.Add(-1)
				release()
			}
		})
	}
	wg.Wait()
	if peak.Load() > 3 || b.InFlight() != 0 {
		t.Errorf("peak in flight %d (want ≤ 3), left in flight %d (want 0)", peak.Load(), b.InFlight())
	}
	if admitted.Load()+refused.Load() != 3200 || admitted.Load() == 0 {
		t.Errorf("admitted %d refused %d", admitted.Load(), refused.Load())
	}
}

func TestBulkheads(t *testing.T) {
	var s Bulkheads
	ctx := context.Background()
	ra, err := s.Acquire(ctx, "vendor-a", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "vendor-a", 1, 0); !errors.Is(err, ErrOverloaded) {
		t.Errorf("second on a: %v, want ErrOverloaded", err)
	}
	rb, err := s.Acquire(ctx, "vendor-b", 1, 0)
	if err != nil {
		t.Errorf("keys share slots: %v", err)
	}
	if s.InFlight("vendor-a") != 1 || s.Len() != 2 {
		t.Errorf("InFlight(a) %d Len %d, want 1, 2", s.InFlight("vendor-a"), s.Len())
	}

	// Resizing: new callers get the new size at once.
	rc, err := s.Acquire(ctx, "vendor-a", 2, 0)
	if err != nil {
		t.Errorf("after raising max to 2: %v", err)
	}
	ra()
	ra()
	rb()
	rc()
	if s.Len() != 0 {
		t.Errorf("Len = %d after every release, want 0 (idle keys dropped)", s.Len())
	}
	if _, err := s.Acquire(ctx, "k", 0, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("max 0: %v, want ErrInvalid", err)
	}
}

// TestBulkheadEnterLeave: Enter takes a slot Leave frees, as Acquire and
// release do.
func TestBulkheadEnterLeave(t *testing.T) {
	b := NewBulkhead(1)
	if err := b.Enter(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Enter(t.Context(), 0); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("second Enter: %v, want ErrOverloaded", err)
	}
	if _, err := b.Acquire(t.Context(), 0); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("Acquire while entered: %v, want ErrOverloaded", err)
	}
	b.Leave()
	if b.InFlight() != 0 {
		t.Fatalf("in flight %d after Leave", b.InFlight())
	}
	if err := b.Enter(t.Context(), 0); err != nil {
		t.Fatalf("Enter after Leave: %v", err)
	}
}
