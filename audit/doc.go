// Package audit is toolhub's audit log: who changed what, when, with the
// state before and after. Vendor registrations and their approvals, key
// issues, rotations and revocations are written here; operators read the
// newest entries (GET /v1/admin/audit, the dashboard).
//
//	log := audit.NewFile(filepath.Join(data, "audit.jsonl")) // or pgaudit.Open(ctx, dsn, nil)
//	err := log.Append(ctx, audit.Entry{At: now, Who: p, Action: "key.revoke", Target: id})
//	recent, err := log.Recent(ctx, 100) // the newest 100, oldest first
//
// Two implementations pass one contract (audittest): [File], a JSON-lines
// file per hub, the embedded default; and pgaudit, an append-only
// PostgreSQL table that hubs sharing a database share.
//
// Secrets are never written: every implementation passes entries through
// [Sanitize] first (toolhub tokens, and literal values of secret-looking
// fields such as an Authorization header).
package audit
