package backend

import (
	"errors"
	"io"
	"sync"
)

// Cleanups is a list of things to close, closed last first (as caddy's
// CleanerUpper modules are): whatever opens a store or starts something
// adds its cleanup right where it is opened, so a constructor that fails
// half way closes exactly what it opened by calling [Cleanups.Close] once.
// The zero value is ready to use; it is safe for concurrent use.
type Cleanups struct {
	mu  sync.Mutex
	fns []func() error
}

// Add puts fn on the list; fn runs before everything added earlier.
func (c *Cleanups) Add(fn func() error) {
	c.mu.Lock()
	c.fns = append(c.fns, fn)
	c.mu.Unlock()
}

// AddFunc puts fn, which returns nothing, on the list.
func (c *Cleanups) AddFunc(fn func()) { c.Add(func() error { fn(); return nil }) }

// AddCloser puts x.Close on the list.
func (c *Cleanups) AddCloser(x io.Closer) { c.Add(x.Close) }

// Close runs the cleanups, the last added first, and empties the list: a
// second Close does nothing. It returns every cleanup's error, joined.
func (c *Cleanups) Close() error {
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	var errs []error
	for i := len(fns) - 1; i >= 0; i-- {
		errs = append(errs, fns[i]())
	}
	return errors.Join(errs...)
}
