// Package sqlitedbtest helps the tests of SQLite stores.
package sqlitedbtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// AwkwardDir makes a data folder whose path holds every character a file:
// URI must escape ('?', '#', '%', ';' and spaces): a store opened on a file
// inside it must create that file there and nowhere else.
func AwkwardDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data ?x=1 #frag %41 ;")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Stores returns what a store contract suite takes of a SQLite store
// opened by open: a new store on a file named file in an [AwkwardDir]
// (checked to be there), and a second store on the file of one made so
// (another process on the same data folder). Both close with the test.
func Stores[S interface {
	comparable
	Close() error
}](file string, open func(ctx context.Context, path string) (S, error)) (fresh func(*testing.T) S, again func(*testing.T, S) S) {
	openAt := func(t *testing.T, path string) S {
		t.Helper()
		s, err := open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the store's file is not at %q: %v", path, err)
		}
		return s
	}
	paths := map[S]string{}
	fresh = func(t *testing.T) S {
		p := filepath.Join(AwkwardDir(t), file)
		s := openAt(t, p)
		paths[s] = p
		return s
	}
	again = func(t *testing.T, s S) S { return openAt(t, paths[s]) }
	return fresh, again
}
