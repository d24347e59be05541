// Package vendorconn is the part of a vendor connection's life that the
// MCP vendors (package servers) and the A2A vendors (package a2a) share:
// the [Lifecycle] of a manager's vendors (add, update with drain and
// retire of the vendor replaced, remove, the reload of [Lifecycle.Sync],
// status, close), the set of vendors it holds ([Set]: the catalog writes
// ordered against replacement, the background work Close waits for), and
// the reconnect backoff ([Backoff], [Sleep]). Each protocol plugs in its
// own vendor ([Conn]: its dial, tool listing, supervision and status) and
// its own specs ([Protocol]).
//
//	m.life = vendorconn.NewLifecycle(cat, vendorconn.Errors{Closed: ErrClosed, Duplicate: ErrDuplicateVendor, Unknown: ErrUnknownVendor},
//		protocol{m}, &vendorconn.LifecycleOptions{Logger: m.opts.Logger})
//	err := m.life.Update(ctx, spec) // the old vendor drains and retires; Update waits for it until ctx is done
package vendorconn
