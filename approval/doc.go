// Package approval keeps vendor changes that wait for an operator: an
// update a vendor made that callers would notice (a tool removed, an
// argument now required, …) is held here until an operator approves or
// rejects it.
//
//	pending, err := sqliteapproval.Open(ctx, filepath.Join(data, "registry.db")) // or pgapproval.Open(ctx, dsn, nil)
//	err = pending.Put(ctx, approval.Change{Vendor: "weather-a", Spec: spec, Breaking: why, By: p, At: now})
//	list, err := pending.List(ctx)
//	c, err := pending.Take(ctx, "weather-a") // the operator decides: exactly one taker gets it
//
// A change is stored, so it survives a restart; in PostgreSQL (package
// pgapproval) every hub sharing the database sees it, so an operator can
// approve on one hub what a vendor submitted on another. Implementations
// pass one contract (approvaltest): [NewMemory], sqliteapproval.Open (a table in
// the embedded registry database) and pgapproval.
package approval
