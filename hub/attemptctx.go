package hub

import (
	"context"
	"sync"
	"time"
)

// attemptContext bounds one upstream attempt by its deadline (or a whole
// call by [Options].Deadline's), as
// context.WithDeadline(parent, deadline) does, but it arms nothing until
// someone asks for its Done channel: an upstream that answers without
// waiting on Done (an in-process vendor, a quick pipe) costs the attempt
// one allocation instead of the timer context's four (the context, its
// timer, the timer's func and the cancel func). An upstream that does wait
// (an HTTP round trip) gets a timer and a watch on the parent then, which
// is what WithDeadline would have made up front.
//
// Err is exact without Done: it reports the parent's error, or
// DeadlineExceeded once the deadline has passed, or Canceled after end.
// Its Done channel is closed whenever Err becomes non-nil. Contexts derived
// from it are canceled through its AfterFunc method (no goroutine each).
// context.Cause of it is its parent's cause, or its Err when the parent
// has none, as for WithDeadline.
type attemptContext struct {
	parent   context.Context
	deadline time.Time

	mu    sync.Mutex
	err   error
	done  chan struct{} // made by the first Done; closed when err is set
	timer *time.Timer   // armed by the first Done
	stop  func() bool   // the watch on parent, set by the first Done
	funcs []*afterFunc  // registered by AfterFunc, run once when err is set
}

type afterFunc struct {
	f    func()
	done bool // ran or was stopped
}

// newAttemptContext returns parent bounded by deadline, which must be
// before parent's own deadline (if any); end releases it, as a cancel
// func does.
func newAttemptContext(parent context.Context, deadline time.Time) *attemptContext {
	return &attemptContext{parent: parent, deadline: deadline}
}

func (c *attemptContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *attemptContext) Value(key any) any { return c.parent.Value(key) }

func (c *attemptContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.checkLocked() {
		close(c.done)
		return c.done
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.cancel(context.DeadlineExceeded) })
	c.stop = context.AfterFunc(c.parent, func() { c.cancel(c.parent.Err()) })
	return c.done
}

func (c *attemptContext) Err() error {
	c.mu.Lock()
	if c.err != nil {
		defer c.mu.Unlock()
		return c.err
	}
	if !c.checkLocked() {
		c.mu.Unlock()
		return nil
	}
	err := c.err
	c.mu.Unlock()
	c.cancel(err) // err is set: closes Done and runs what waits on it
	return err
}

// checkLocked sets c.err if the parent is done or the deadline has
// passed, and reports whether c.err is set.
func (c *attemptContext) checkLocked() bool {
	if c.err == nil {
		if err := c.parent.Err(); err != nil {
			c.err = err
		} else if !time.Now().Before(c.deadline) {
			c.err = context.DeadlineExceeded
		}
	}
	return c.err != nil
}

// AfterFunc is what context.AfterFunc and the contexts derived from c use
// to learn that c is done, instead of a goroutine waiting on Done.
func (c *attemptContext) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	a := &afterFunc{f: f}
	if c.done == nil {
		c.mu.Unlock()
		c.Done() // arms the timer and the watch on the parent
		c.mu.Lock()
	}
	if c.err != nil {
		c.mu.Unlock()
		a.done = true
		go f()
		return func() bool { return false }
	}
	c.funcs = append(c.funcs, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if a.done {
			return false
		}
		a.done = true
		return true
	}
}

// cancel sets c's error (once; the first error stays), closes Done, stops
// the timer and the watch, and runs the registered funcs.
func (c *attemptContext) cancel(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	if c.done != nil {
		select {
		case <-c.done:
		default:
			close(c.done)
		}
	}
	timer, stop, funcs := c.timer, c.stop, c.funcs
	c.timer, c.stop, c.funcs = nil, nil, nil
	var run []func()
	for _, a := range funcs {
		if !a.done {
			a.done = true
			run = append(run, a.f)
		}
	}
	c.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	if stop != nil {
		stop()
	}
	for _, f := range run {
		go f()
	}
}

// end releases c when its attempt is over, as a cancel func: c and what
// derives from it are canceled.
func (c *attemptContext) end() { c.cancel(context.Canceled) }
