// Package pgapproval is an [approval.Store] in PostgreSQL: vendor changes
// waiting for an operator, shared by every hub on the database, so an
// operator can approve on one hub what a vendor submitted on another.
//
//	pending, err := pgapproval.Open(ctx, "postgres://toolhub@db:5432/toolhub", &pgapproval.Options{Schema: "toolhub"})
//
// Changes are rows of pending_vendor_changes(vendor, change json, at) in
// the schema (created if missing, next to the registry's tables). Take is
// one DELETE … RETURNING: of hubs deciding at once, one gets the change.
package pgapproval
