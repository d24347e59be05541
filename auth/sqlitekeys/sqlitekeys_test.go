package sqlitekeys_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/auth/authtest"
	"github.com/toolhub/toolhub/auth/sqlitekeys"
	"github.com/toolhub/toolhub/internal/backend/sqlitedb/sqlitedbtest"
)

func TestContract(t *testing.T) {
	open := func(t *testing.T, path string) auth.Store {
		s, err := sqlitekeys.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the store's file is not at %q: %v", path, err)
		}
		return s
	}
	paths := map[auth.Store]string{}
	authtest.Run(t,
		func(t *testing.T) auth.Store {
			// A data folder whose path a file: URI must escape.
			p := filepath.Join(sqlitedbtest.AwkwardDir(t), "keys.db")
			s := open(t, p)
			paths[s] = p
			return s
		},
		// Two hubs on one data folder (or `toolhub keys` beside a hub).
		func(t *testing.T, s auth.Store) auth.Store { return open(t, paths[s]) },
	)
}
