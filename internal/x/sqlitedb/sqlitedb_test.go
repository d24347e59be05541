package sqlitedb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/x/sqlitedb/sqlitedbtest"
)

func TestOpenAwkwardPathAndPragmas(t *testing.T) {
	path := filepath.Join(sqlitedbtest.AwkwardDir(t), "store.db")
	db, err := Open(path, &Options{BusyTimeout: 1234 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file is not where the path says: %v", err)
	}
	for _, c := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"busy_timeout", "1234"},
		{"foreign_keys", "1"},
		{"synchronous", "1"}, // NORMAL
	} {
		var got string
		if err := db.QueryRowContext(t.Context(), "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("PRAGMA %s = %s, want %s", c.pragma, got, c.want)
		}
	}
	if got := db.Stats().MaxOpenConnections; got != DefaultMaxOpenConns {
		t.Errorf("max open conns = %d, want %d", got, DefaultMaxOpenConns)
	}
}

func TestOpenRefusesMissingFolderAndMemory(t *testing.T) {
	for _, p := range []string{"", ":memory:", filepath.Join(t.TempDir(), "missing", "x.db")} {
		if db, err := Open(p, nil); err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded, want an error", p)
		}
	}
}

// Many pools opening one new file at once all get in: the first statement
// of each connection (which switches the file to WAL) waits for the
// others' locks instead of failing with SQLITE_BUSY. The busy_timeout
// pragma must run before journal_mode does; in the other order one open
// in a few hundred failed with "database is locked".
func TestConcurrentFirstStatements(t *testing.T) {
	const files, pools = 40, 8
	for f := range files {
		path := filepath.Join(t.TempDir(), "store.db")
		errs := make([]error, pools)
		var wg sync.WaitGroup
		for i := range pools {
			wg.Go(func() {
				db, err := Open(path, nil)
				if err != nil {
					errs[i] = err
					return
				}
				defer db.Close()
				tx, err := db.BeginTx(t.Context(), nil)
				if err != nil {
					errs[i] = err
					return
				}
				defer tx.Rollback()
				if _, err = tx.ExecContext(t.Context(), `CREATE TABLE IF NOT EXISTS t (x INTEGER)`); err == nil {
					err = tx.Commit()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("file %d: %v", f, err)
		}
	}
}

func TestOpenTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	const create = `CREATE TABLE IF NOT EXISTS t (x INTEGER)`
	for range 2 { // the second open finds the table made
		db, err := OpenTables(t.Context(), path, nil, create)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(t.Context(), `INSERT INTO t (x) VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	_, err := OpenTables(t.Context(), path, nil, `CREATE TABLE t (x INTEGER)`)
	if err == nil || !strings.Contains(err.Error(), "open "+path+": ") || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a failing statement: err = %v; want it to name the path and the cause", err)
	}
}
