// Package vendorconn is the part of a vendor connection's life that the
// MCP vendors (package servers) and the A2A vendors (package a2a) share:
// the set of vendors a manager holds ([Set]: add, replace, remove, the
// catalog writes ordered against replacement, the background work Close
// waits for), the reconcile plan of a configuration reload ([Plan]), and
// the reconnect backoff ([Backoff], [Sleep]). Each protocol keeps its own
// dial, tool listing and status.
//
//	m.set = vendorconn.NewSet[*vendor](cat, vendorconn.Errors{Closed: ErrClosed, Duplicate: ErrDuplicateVendor, Unknown: ErrUnknownVendor})
//	err := m.set.Add(spec.ID, func() *vendor { return newVendor(m, spec) }, (*vendor).start)
package vendorconn
