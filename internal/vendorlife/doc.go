// Package vendorlife runs the life of a vendor registered at run time,
// through the admin API: registration, updates, the versions kept of it,
// approval by an operator, rollback and removal.
//
// A vendor key changes only its own vendor; an operator key changes any
// vendor not declared in the config file. Every change is checked (names,
// schemas, outbound safety), tried on the side as the hub would connect to
// it, and compared with what is live: a change callers would notice (a tool
// removed, an argument now required, a vendor allowed more private data)
// waits in an [approval.Store] until an operator decides, unless an
// operator made it. So does a change of what its tools say to a model (name,
// title, description, annotations, schemas) against their pins
// ([registry.Pinner], Options.Pins): a registration, an operator's change
// and an approval pin the tools they were tried with, and the versions the
// catalog's gate holds from a live resync are listed and decided with the
// pending changes. A rollback is such a change too: it cannot skip the
// approval the same change needs by PUT. Every change that goes live is a
// new version in the [registry.Store] and a line in the audit log.
//
// The wiring (internal/app) gives a [Lifecycle] its stores and says, in
// [Options], how to put the stored vendors in force and how to audit:
//
//	life := vendorlife.New(&vendorlife.Options{
//		Store:     store,     // registry.Store: vendors and their versions
//		Approvals: approvals, // approval.Store: changes waiting for an operator
//		Catalog:   catalog,   // the tools live now
//		Guard:     guard,     // where vendor URLs may point
//		Apply:     app.applyStored,
//		Audit:     app.audit,
//	})
//	change, err := life.Register(ctx, spec, true) // ctx carries the caller's principal (api.WithPrincipal)
//	// change.Status: "live" or "pending_approval"
//
// [Lifecycle] implements the vendor half of [api.Admin].
package vendorlife
