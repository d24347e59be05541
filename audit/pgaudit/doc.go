// Package pgaudit is an [audit.Log] in PostgreSQL: one append-only table
// that every hub sharing the database writes to and reads from.
//
//	log, err := pgaudit.Open(ctx, "postgres://toolhub@db:5432/toolhub", &pgaudit.Options{Schema: "toolhub"})
//	if err != nil {
//		return err // `pgaudit: open db:5432/toolhub schema "toolhub": ...`
//	}
//	defer log.Close()
//
// Entries are rows of audit_log(seq, at, who, action, target, before,
// after) in the schema (created if missing, next to the registry's
// tables), in seq order. seq comes from a sequence: two entries appended
// at once by two hubs are ordered by when each took its number, which may
// differ from the order they committed in. Triggers refuse UPDATE, DELETE and
// TRUNCATE on the table: to prune it an operator drops the triggers on
// purpose. before and after are json (not jsonb): they read back as
// written.
package pgaudit
