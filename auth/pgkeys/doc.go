// Package pgkeys is an [auth.Store] in PostgreSQL, for several hubs that
// share their API keys: a key issued, rotated or revoked on one hub is
// seen by every hub.
//
//	keys, err := pgkeys.Open(ctx, "postgres://toolhub@db:5432/toolhub", &pgkeys.Options{Schema: "toolhub"})
//	if err != nil {
//		return err // `pgkeys: open db:5432/toolhub schema "toolhub": ...`
//	}
//	defer keys.Close()
//	p, err := auth.Verify(ctx, keys, token)
//
// Keys are rows of api_keys in the schema (created if missing, next to the
// registry's and the ledger's tables); like every store, only the SHA-256
// of a secret is kept.
//
// Verifying a key reads it by id, on every request. So that this costs no
// round trip to the database, a Store keeps the keys it read for up to
// [Options].CacheTTL, but only while it listens for changes: every write
// sends NOTIFY toolhub_keys, '<id>' in its transaction, and each Store's
// listener (a connection of its own) forgets that key when the change
// commits. A write through a Store is seen by that Store at once; by the
// other hubs as soon as PostgreSQL delivers the notification (milliseconds;
// BenchmarkRevocationSeen measures it). While a Store is not listening (not
// yet connected, or reconnecting) it reads every key from the database;
// when it starts listening again it forgets everything. CacheTTL bounds
// how stale a key can be should notifications stop without the connection
// noticing.
//
// When the database cannot be reached at all, a key read in the last
// [Options].StaleIfError (5 minutes) still verifies: nobody can revoke one
// during the outage either, so callers keep working; keys not read before
// it do not verify.
package pgkeys
