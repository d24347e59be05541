// Package sqlitedb is toolhub's one way to open a SQLite file: every
// embedded store (registry, approvals, API keys, jobs and A2A tasks,
// ledger) opens its file through [Open], so all of them get the same DSN
// form, the same pragmas and the same connection policy.
//
//	db, err := sqlitedb.Open(filepath.Join(dataDir, "jobs.db"), &sqlitedb.Options{MaxOpenConns: 1})
//
// The DSN is a file: URI built with net/url ([DSN]): a data folder whose
// path holds '?', '#', '%' or a space opens the file it names. Every
// connection runs
//
//	PRAGMA busy_timeout(10000)   -- a locked file is waited for, not failed ([Options].BusyTimeout)
//	PRAGMA foreign_keys(1)
//	PRAGMA synchronous(NORMAL)   -- safe with WAL; a power cut may lose the last commits, never corrupt
//
// and [Open] puts the file in WAL mode (readers do not block the writer;
// the mode is kept in the file). That is not a per-connection pragma:
// switching a new file to WAL takes its exclusive lock, and SQLite fails
// that at once, without the busy timeout, when another connection holds
// a shared lock, so several pools opening one new file at once would see
// "database is locked". Open retries it within the busy timeout instead.
//
// and every read-write transaction begins IMMEDIATE (takes the write lock
// at BEGIN), so a read-then-write transaction never fails half way to
// upgrade its lock. The driver is modernc.org/sqlite (pure Go, no cgo).
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"modernc.org/sqlite" // the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultBusyTimeout is how long a connection waits for another's write
// lock before it fails with SQLITE_BUSY.
const DefaultBusyTimeout = 10 * time.Second

// DefaultMaxOpenConns is the pool size: SQLite serialises writers, so a
// few connections serve concurrent readers (WAL) and one writer at a time.
const DefaultMaxOpenConns = 4

// Options tune [Open]. A nil *Options means the defaults.
type Options struct {
	// BusyTimeout is the busy_timeout pragma. Zero means
	// [DefaultBusyTimeout].
	BusyTimeout time.Duration
	// MaxOpenConns caps the pool (also its idle connections). Zero means
	// [DefaultMaxOpenConns]; 1 makes every statement run in order on one
	// connection (the job store needs that).
	MaxOpenConns int
}

func (o *Options) busy() time.Duration {
	if o == nil || o.BusyTimeout <= 0 {
		return DefaultBusyTimeout
	}
	return o.BusyTimeout
}

func (o *Options) conns() int {
	if o == nil || o.MaxOpenConns <= 0 {
		return DefaultMaxOpenConns
	}
	return o.MaxOpenConns
}

// DSN is the driver's data source name for the file at abs (an absolute
// path): a file: URI, its path escaped, with the pragmas above.
func DSN(abs string, opts *Options) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(opts.busy().Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	// url.URL escapes '?', '#', '%' and spaces in the path; SQLite decodes
	// them (a file: URI, RFC 3986). "file://" + an empty authority.
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String()
}

// Open opens the SQLite file at path, whose directory must exist,
// creating it if it is missing, and puts it in WAL mode. Errors name the
// absolute path.
func Open(path string, opts *Options) (*sql.DB, error) {
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("open %q: want a file path", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if fi, err := os.Stat(filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("open %s: directory: %w", abs, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("open %s: %s is not a directory", abs, filepath.Dir(abs))
	}
	db, err := sql.Open("sqlite", DSN(abs, opts))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	n := opts.conns()
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	if err := walMode(db, opts.busy()); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	return db, nil
}

// OpenTables is [Open], then runs create, the statements that make a
// store's tables when they are missing (CREATE TABLE IF NOT EXISTS …); a
// failure closes the file again.
func OpenTables(ctx context.Context, path string, opts *Options, create ...string) (*sql.DB, error) {
	db, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	for _, stmt := range create {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
	}
	return db, nil
}

// walMode puts db's file in WAL mode, retrying while another connection
// holds a lock, for up to busy.
func walMode(db *sql.DB, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var mode string
		err := db.QueryRow(`PRAGMA journal_mode(WAL)`).Scan(&mode)
		if err == nil && mode != "wal" {
			return fmt.Errorf("journal mode: the file stays in %q mode, want wal", mode)
		}
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
			return err // nil, or "file is not a database (26)"
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("switch to WAL mode: another connection held the file for %v: %w", busy, err)
		}
		time.Sleep(wait)
	}
}
