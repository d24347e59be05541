// Package pgstore is a [registry.Store] in PostgreSQL, for several hubs
// that share one registry.
//
//	s, err := pgstore.Open(ctx, "postgres://toolhub@db:5432/toolhub", &pgstore.Options{Schema: "toolhub"})
//	if err != nil {
//		return err // `pgstore: open db:5432/toolhub schema "toolhub": ...`
//	}
//	defer s.Close()
//	go s.Listen(ctx, func(kind, id string) {
//		switch kind {
//		case pgstore.KindResync: // started, or reconnected: reload everything
//		case pgstore.KindVendor: // re-read vendor id (ErrNotFound: it was deleted)
//		}
//	})
//	rec, err := s.PutVendor(ctx, v, 0, "alice") // every instance's Listen hears "vendor:<id>"
//
// [Open] creates the schema and its tables if they are missing, or migrates
// them from an older toolhub, in one transaction under an advisory lock (a
// schema_version table records where the schema is). Table names are
// qualified with the schema, so the connection's search_path does not
// matter.
//
// Each vendor version is one row of vendor_versions(id, version, spec
// jsonb, updated_at, updated_by), keyed by (id, version): the newest
// version is the highest. PutVendor reads the current version and inserts
// the next in one transaction. Writes to one vendor (puts and deletes)
// take a transaction-scoped advisory lock on it, so they run one after the
// other; should a writer insert the same version first anyway, the key's
// unique violation (23505) is the conflict: [registry.ErrVersionConflict]
// for an expected version, a fresh attempt for "any" (-1). Capability
// specs are json rather than jsonb, which would reorder the keys of their
// schemas.
//
// Every put and delete sends NOTIFY toolhub_registry, '<kind>:<id>' in its
// own transaction, so a notification means a committed change;
// [Store.Listen] delivers them.
package pgstore
