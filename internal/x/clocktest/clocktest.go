// Package clocktest is a settable clock for the tests of what takes one
// (limiters, breakers, caches, TTLs): time moves only when a test moves
// it, so no test sleeps for a window to pass.
//
//	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
//	l := limit.NewLocal(&limit.LocalOptions{Now: clk.Now})
//	clk.Advance(time.Second)
package clocktest

import (
	"sync"
	"time"
)

// Clock is a clock that stands still until advanced. It is safe for
// concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
