package sqlstore_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/registrytest"
	"github.com/toolhub/toolhub/registry/sqlstore"
)

func open(t testing.TB, path string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	registrytest.RunStoreContract(t,
		func(t *testing.T) registry.Store { return open(t, filepath.Join(t.TempDir(), "registry.db")) },
		func(t *testing.T, s registry.Store) registry.Store { return open(t, s.(*sqlstore.Store).Path()) },
	)
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want string // the error starts with this
	}{
		{"empty path", "", `sqlstore: open "": want a file path`},
		{"memory", ":memory:", `sqlstore: open ":memory:": want a file path`},
		{"missing directory", filepath.Join(dir, "nope", "registry.db"), "sqlstore: open " + filepath.Join(dir, "nope", "registry.db") + ": directory: "},
		{"parent is a file", filepath.Join(file, "registry.db"), "sqlstore: open " + filepath.Join(file, "registry.db") + ": " + file + " is not a directory"},
		{"not a database", file + "x", "sqlstore: open " + file + "x: file is not a database"},
	}
	if err := os.WriteFile(file+"x", []byte(strings.Repeat("not sqlite\n", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := sqlstore.Open(t.Context(), tt.path, nil)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", tt.path)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Open(%q) error:\n%v\nwant it to start with\n%s", tt.path, err, tt.want)
			}
		})
	}
}

// A path is a path, whatever characters it holds: none of them is read as
// part of a URI.
func TestOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "my data?x=1#frag%20", "registry.db")
	if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	if _, err := s.PutVendor(t.Context(), registrytest.Vendors()[0], 0, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the file is not where it was asked for: %v", err)
	}
	if got := s.Path(); got != path {
		t.Errorf("Path() = %q, want %q", got, path)
	}
}

func TestFileSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	open(t, path)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	var version int
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
	if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != 2 {
		t.Errorf("schema_version = %d, want 2", version)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	open(t, path).Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlstore.Open(t.Context(), path, nil)
	if err == nil || !strings.Contains(err.Error(), "tables are at version 99, newer than this toolhub knows (2): upgrade toolhub") {
		t.Errorf("Open of a newer file: err = %v, want a refusal naming both versions", err)
	}
}

// Stores opening a new file at once migrate it once, and all of them work.
func TestConcurrentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	const n = 6
	stores := make([]*sqlstore.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = sqlstore.Open(t.Context(), path, nil) })
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		v := registrytest.Vendors()[0]
		if _, err := s.PutVendor(t.Context(), v, -1, "t"); err != nil {
			t.Errorf("store %d: %v", i, err)
		}
	}
	h, err := stores[0].VendorHistory(t.Context(), registrytest.Vendors()[0].ID)
	if err != nil || len(h) != n {
		t.Errorf("history: %d versions, err %v; want %d", len(h), err, n)
	}
}

func TestClosedStore(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "registry.db"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	_, err := s.GetVendor(t.Context(), "x")
	if err == nil || errors.Is(err, registry.ErrNotFound) || !strings.HasPrefix(err.Error(), `sqlstore: get vendor "x": `) {
		t.Errorf("GetVendor on a closed store: err = %v, want a sqlstore error", err)
	}
}
