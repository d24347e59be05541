// Package sqlitedbtest helps the tests of SQLite stores.
package sqlitedbtest

import (
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
