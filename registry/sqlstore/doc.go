// Package sqlstore is a [registry.Store] in one SQLite file: the embedded
// default, pure Go (modernc.org/sqlite, no cgo).
//
//	s, err := sqlstore.Open(ctx, filepath.Join(dataDir, "registry.db"), nil)
//	if err != nil {
//		return err // "sqlstore: open /data/registry.db: ..."
//	}
//	defer s.Close()
//	rec, err := s.PutVendor(ctx, v, 0, "alice") // 0: a new vendor
//	if errors.Is(err, registry.ErrVersionConflict) {
//		// someone else registered it first: read it and try again
//	}
//
// [Open] creates the file's tables, or migrates them from an older
// toolhub, in one transaction (a schema_version table records where the
// file is). The file runs in WAL mode with a busy timeout and foreign keys
// on; several Stores, in one process or several, can share it.
//
// Each vendor version is one row of vendor_versions(id, version, spec,
// updated_at, updated_by), keyed by (id, version): the newest version is
// the highest. Specs are stored as JSON text. Every write transaction
// begins IMMEDIATE, taking the file's write lock before it reads the
// current version, so an expected-version check and the insert it guards
// are atomic across connections and processes.
package sqlstore
