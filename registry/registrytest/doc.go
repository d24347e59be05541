// Package registrytest holds the contract suite that every [registry.Store]
// passes: the in-memory store, sqlstore (SQLite) and pgstore (PostgreSQL).
//
// A store's test hands [RunStoreContract] a function that makes a fresh,
// empty store, and, for a store that persists, a [ReopenFunc] that opens a
// second store on the same backing data (the same file, the same schema):
//
//	func TestContract(t *testing.T) {
//		open := func(t *testing.T, path string) registry.Store {
//			s, err := sqlstore.Open(t.Context(), path, nil)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		}
//		registrytest.RunStoreContract(t,
//			func(t *testing.T) registry.Store { return open(t, filepath.Join(t.TempDir(), "registry.db")) },
//			func(t *testing.T, s registry.Store) registry.Store { return open(t, s.(*sqlstore.Store).Path()) },
//		)
//	}
//
// The suite compares records with go-cmp. Two differences that a store
// backed by JSON cannot preserve are not differences of the contract: a nil
// slice or map equals an empty one, and two JSON schemas are equal when they
// hold the same tokens in the same order (whitespace and escaping may
// differ; object key order may not, since it is the argument order a model
// sees).
package registrytest
