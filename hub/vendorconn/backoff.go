package vendorconn

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff bounds the waits between reconnects of one vendor: the n-th
// wait in a row is about Min·2ⁿ, never over Max, jittered.
type Backoff struct {
	Min time.Duration // zero means 500 ms
	Max time.Duration // zero means 30 s
}

// WithDefaults fills the zero fields, and raises Max to Min.
func (b Backoff) WithDefaults() Backoff {
	if b.Min <= 0 {
		b.Min = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Max < b.Min {
		b.Max = b.Min
	}
	return b
}

// Delay returns the wait before attempt n (0-based): "equal jitter", half
// fixed and half random, so a fleet of vendors restarted together spreads
// out while each wait still grows.
func (b Backoff) Delay(n int) time.Duration {
	d := b.Max
	if n < 62 {
		if e := b.Min << n; e > 0 && e < b.Max {
			d = e
		}
	}
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(d-half+1)
}

// Sleep waits d, and reports false when ctx ends first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
