package sqlitekeys_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/auth/authtest"
	"github.com/toolhub/toolhub/auth/sqlitekeys"
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
			p := filepath.Join(awkwardDir(t), "keys.db")
			s := open(t, p)
			paths[s] = p
			return s
		},
		// Two hubs on one data folder (or `toolhub keys` beside a hub).
		func(t *testing.T, s auth.Store) auth.Store { return open(t, paths[s]) },
	)
}

// awkwardDir is a data folder whose path holds '?', '#', '%' and spaces.
func awkwardDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data ?x=1 #frag %41")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	return dir
}
