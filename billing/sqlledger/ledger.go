// Package sqlledger is the embedded [billing.Ledger]: one SQLite file (pure
// Go, modernc.org/sqlite) in WAL mode; each Append is one transaction with
// a prepared INSERT … ON CONFLICT(key) DO NOTHING.
//
//	l, err := sqlledger.Open(ctx, filepath.Join(data, "ledger.db"), nil)
//	defer l.Close()
//	err = l.Append(ctx, events)
package sqlledger

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/internal/ledgersql"
)

// Options configure Open. A nil *Options means the defaults.
type Options struct {
	// BusyTimeout is how long a write waits for another writer's lock;
	// zero means 5s.
	BusyTimeout time.Duration
}

// Ledger is a SQLite ledger.
type Ledger struct {
	db   *sql.DB
	path string

	appended, dups atomic.Int64
	closeOnce      sync.Once
	closeErr       error
}

var _ billing.Ledger = (*Ledger)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS events (
	key TEXT NOT NULL PRIMARY KEY,
	call_id TEXT NOT NULL,
	kind TEXT NOT NULL,
	attempt INTEGER NOT NULL,
	time_us INTEGER NOT NULL,
	ingested_us INTEGER NOT NULL,
	tenant TEXT NOT NULL,
	vendor TEXT NOT NULL,
	tool TEXT NOT NULL,
	capability TEXT NOT NULL,
	outcome TEXT NOT NULL,
	reason TEXT NOT NULL,
	latency_ns INTEGER NOT NULL,
	units TEXT NOT NULL,
	images INTEGER NOT NULL,
	tokens INTEGER NOT NULL,
	seconds INTEGER NOT NULL,
	tenant_unit_price INTEGER NOT NULL,
	tenant_cost INTEGER NOT NULL,
	vendor_unit_price INTEGER NOT NULL,
	vendor_cost INTEGER NOT NULL,
	currency TEXT NOT NULL,
	price_version TEXT NOT NULL,
	adjusts TEXT NOT NULL,
	month_us INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_time ON events (time_us);
CREATE TABLE IF NOT EXISTS rollup_hours (
	hour_us INTEGER NOT NULL,
	month_us INTEGER NOT NULL,
	tenant TEXT NOT NULL,
	vendor TEXT NOT NULL,
	tool TEXT NOT NULL,
	currency TEXT NOT NULL,
	calls INTEGER NOT NULL,
	rejected INTEGER NOT NULL,
	failed INTEGER NOT NULL,
	cached INTEGER NOT NULL,
	attempts INTEGER NOT NULL,
	paid INTEGER NOT NULL,
	images INTEGER NOT NULL,
	tokens INTEGER NOT NULL,
	seconds INTEGER NOT NULL,
	tenant_cost INTEGER NOT NULL,
	vendor_cost INTEGER NOT NULL,
	PRIMARY KEY (hour_us, tenant, vendor, tool, currency)
) WITHOUT ROWID;
`

var dialect = ledgersql.Dialect{
	Placeholder: func(int) string { return "?" },
}

// Open opens (creating if needed) the ledger file at path. Its directory
// must exist.
func Open(ctx context.Context, path string, opts *Options) (*Ledger, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlledger: open %s: %w", path, err)
	}
	if fi, err := os.Stat(filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("sqlledger: open %s: directory: %w", abs, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("sqlledger: open %s: %s is not a directory", abs, filepath.Dir(abs))
	}
	q := url.Values{}
	q.Set("_pragma", "busy_timeout("+strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlledger: open %s: %w", abs, err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlledger: open %s: create tables: %w", abs, err)
	}
	return &Ledger{db: db, path: abs}, nil
}

// Path is the ledger file's absolute path.
func (l *Ledger) Path() string { return l.path }

// rowsPerInsert is how many events one INSERT statement carries.
const rowsPerInsert = 128

// Append stores events in one transaction, ignoring known keys, and adds
// the new ones to the hourly rollups in the same transaction.
func (l *Ledger) Append(ctx context.Context, events []billing.Event) error {
	if len(events) == 0 {
		return nil
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlledger: append: %w", err)
	}
	defer tx.Rollback()
	inserted := make(map[string]bool, len(events))
	err = insertChunks(ctx, tx, len(events), rowsPerInsert, ledgersql.NumColumns,
		"INSERT INTO events ("+ledgersql.Columns+") VALUES ", " ON CONFLICT (key) DO NOTHING RETURNING key",
		func(args []any, i int) []any { return ledgersql.AppendValues(args, &events[i]) },
		func(rows *sql.Rows) error {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			inserted[k] = true
			return nil
		})
	if err != nil {
		return fmt.Errorf("sqlledger: append: %w", err)
	}
	n := int64(len(inserted))
	hours := ledgersql.Aggregate(events, inserted)
	err = insertChunks(ctx, tx, len(hours), 64, ledgersql.NumRollupColumns,
		"INSERT INTO rollup_hours ("+ledgersql.RollupTableColumns+") VALUES ", fmt.Sprintf(ledgersql.RollupUpdate, "rollup_hours"),
		func(args []any, i int) []any { return append(args, hours[i].Values()...) }, nil)
	if err != nil {
		return fmt.Errorf("sqlledger: append: rollups: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlledger: append: commit: %w", err)
	}
	l.appended.Add(n)
	l.dups.Add(int64(len(events)) - n)
	return nil
}

// insertChunks runs multi-row INSERTs of up to per rows of cols values
// each; scan, when set, reads the RETURNING rows.
func insertChunks(ctx context.Context, tx *sql.Tx, total, per, cols int, head, tail string,
	values func(args []any, i int) []any, scan func(*sql.Rows) error) error {
	stmts := map[int]*sql.Stmt{}
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	args := make([]any, 0, per*cols)
	for i := 0; i < total; i += per {
		n := min(per, total-i)
		s := stmts[n]
		if s == nil {
			var err error
			s, err = tx.PrepareContext(ctx, head+strings.TrimSuffix(strings.Repeat(row+",", n), ",")+tail)
			if err != nil {
				return err
			}
			defer s.Close()
			stmts[n] = s
		}
		args = args[:0]
		for j := i; j < i+n; j++ {
			args = values(args, j)
		}
		if scan == nil {
			if _, err := s.ExecContext(ctx, args...); err != nil {
				return err
			}
			continue
		}
		rows, err := s.QueryContext(ctx, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := scan(rows); err != nil {
				rows.Close()
				return err
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Query calls fn for each matching event, by time then key.
func (l *Ledger) Query(ctx context.Context, f billing.Filter, fn func(billing.Event) error) error {
	q, args := dialect.Select("events", f)
	rows, err := l.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("sqlledger: query: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		ev, err := ledgersql.Scan(rows.Scan)
		if err != nil {
			return fmt.Errorf("sqlledger: query: %w", err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlledger: query: %w", err)
	}
	return nil
}

// Rollup sums events by q.GroupBy.
func (l *Ledger) Rollup(ctx context.Context, q billing.RollupQuery) ([]billing.Row, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	query, args := dialect.Rollup("events", q)
	if ledgersql.UsesRollups(q.Filter) {
		query, args = dialect.RollupFromHours("rollup_hours", q)
	}
	rows, err := l.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlledger: rollup: %w", err)
	}
	defer rows.Close()
	var out []billing.Row
	for rows.Next() {
		r, err := ledgersql.ScanRow(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("sqlledger: rollup: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlledger: rollup: %w", err)
	}
	ledgersql.SortRows(out)
	return out, nil
}

// Stats counts appended and duplicate events.
func (l *Ledger) Stats() billing.LedgerStats {
	return billing.LedgerStats{Appended: l.appended.Load(), Duplicates: l.dups.Load()}
}

// Close closes the file.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.db.Close() })
	return l.closeErr
}
