// Package pgledger is the shared [billing.Ledger] on PostgreSQL (pgx), in
// tables usage_events and usage_rollup_hours of one schema: each Append is
// one transaction that COPYs the batch into usage_events and upserts its
// hourly rollups; a batch holding a key already stored is instead written
// with INSERT … ON CONFLICT (key) DO NOTHING (see [Ledger.Append]), so
// several hubs can write one ledger and replays never duplicate.
//
//	l, err := pgledger.Open(ctx, "postgres://…", &pgledger.Options{Schema: "toolhub"})
package pgledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolhub/toolhub/internal/x/pgdb"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/internal/ledgersql"
)

// DefaultSchema holds the table when [Options].Schema is empty.
const DefaultSchema = "toolhub"

// Options configure Open. A nil *Options means the defaults.
type Options struct {
	Schema   string // created if missing; "" means DefaultSchema
	MaxConns int32  // 0: pgxpool's default or the DSN's pool_max_conns
	// ReadOnly opens an existing ledger for reports: no schema or table is
	// created, and Open fails if the table is missing.
	ReadOnly bool
}

// Ledger is a PostgreSQL ledger.
type Ledger struct {
	pool   *pgxpool.Pool
	schema string
	table  string
	hours  string
	// cols are the columns Query reads: ledgersql.LegacyColumns for a
	// table opened read-only before it was migrated.
	cols string

	appended, dups atomic.Int64
	closeOnce      sync.Once
}

var _ billing.Ledger = (*Ledger)(nil)

var dialect = ledgersql.Dialect{
	Placeholder: func(n int) string { return fmt.Sprintf("$%d", n) },
}

// Open connects and creates the schema and table if missing.
func Open(ctx context.Context, dsn string, opts *Options) (*Ledger, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	pool, _, err := pgdb.Open(ctx, dsn, &pgdb.Options{Schema: o.Schema, MaxConns: o.MaxConns})
	if err != nil {
		return nil, fmt.Errorf("pgledger: %w", err)
	}
	s := pgx.Identifier{o.Schema}.Sanitize()
	l := &Ledger{pool: pool, schema: o.Schema, table: s + ".usage_events", hours: s + ".usage_rollup_hours", cols: ledgersql.Columns}
	ddl := `CREATE SCHEMA IF NOT EXISTS ` + s + `;
CREATE TABLE IF NOT EXISTS ` + l.table + ` (
	key text PRIMARY KEY,
	call_id text NOT NULL,
	kind text NOT NULL,
	attempt bigint NOT NULL,
	time_us bigint NOT NULL,
	ingested_us bigint NOT NULL,
	tenant text NOT NULL,
	vendor text NOT NULL,
	tool text NOT NULL,
	capability text NOT NULL,
	outcome text NOT NULL,
	reason text NOT NULL,
	latency_ns bigint NOT NULL,
	units text NOT NULL,
	images bigint NOT NULL,
	tokens bigint NOT NULL,
	seconds bigint NOT NULL,
	tenant_unit_price bigint NOT NULL,
	tenant_cost bigint NOT NULL,
	vendor_unit_price bigint NOT NULL,
	vendor_cost bigint NOT NULL,
	currency text NOT NULL,
	price_version text NOT NULL,
	adjusts text NOT NULL,
	month_us bigint NOT NULL,
	attempt_latency_ns bigint NOT NULL DEFAULT 0
);
-- migration: a table made before rows could hold a call and its one
-- attempt (billing.MergeAttempt) gains the attempt's latency; its rows,
-- one event each, read as before.
ALTER TABLE ` + l.table + ` ADD COLUMN IF NOT EXISTS attempt_latency_ns bigint NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS usage_events_time ON ` + l.table + ` (time_us);
CREATE TABLE IF NOT EXISTS ` + l.hours + ` (
	hour_us bigint NOT NULL,
	month_us bigint NOT NULL,
	tenant text NOT NULL,
	vendor text NOT NULL,
	tool text NOT NULL,
	currency text NOT NULL,
	calls bigint NOT NULL,
	rejected bigint NOT NULL,
	failed bigint NOT NULL,
	cached bigint NOT NULL,
	attempts bigint NOT NULL,
	paid bigint NOT NULL,
	images bigint NOT NULL,
	tokens bigint NOT NULL,
	seconds bigint NOT NULL,
	tenant_cost bigint NOT NULL,
	vendor_cost bigint NOT NULL,
	PRIMARY KEY (hour_us, tenant, vendor, tool, currency)
);
ALTER TABLE ` + l.hours + ` SET (` + hoursStorage + `);`
	if o.ReadOnly {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, l.table).Scan(&ok); err != nil || !ok {
			pool.Close()
			if err == nil {
				err = fmt.Errorf("no ledger table %s (has a hub written usage with --postgres and this schema?)", l.table)
			}
			return nil, fmt.Errorf("pgledger: %w", err)
		}
		var migrated bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
			WHERE table_schema = $1 AND table_name = 'usage_events' AND column_name = 'attempt_latency_ns')`, o.Schema).Scan(&migrated)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("pgledger: %w", err)
		}
		if !migrated {
			l.cols = ledgersql.LegacyColumns
		}
		return l, nil
	}
	// Concurrent CREATE … IF NOT EXISTS can still race in the catalog:
	// serialise on an advisory lock.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('toolhub.pgledger'))`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, ddl)
		return err
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgledger: create schema %s: %w", o.Schema, err)
	}
	return l, nil
}

// hoursStorage keeps the hourly rollups small: every Append updates the
// rows of its hours, and each update leaves a dead row version behind. With
// pages half empty (fillfactor 50) an update stays on its page (a HOT
// update: no new index entry) and the page's dead versions are pruned the
// next time it fills, with no vacuum; autovacuum runs after a few percent
// of rows changed, not the default 20%. Without this, a fast load (10M
// events in minutes) left ~40 dead versions per live row and the monthly
// report, which reads the whole table, ran 10× slower. fillfactor applies
// to pages written from now on, so existing ledgers improve as they go.
const hoursStorage = `fillfactor = 50, autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000`

// Schema is the schema holding the ledger's table.
func (l *Ledger) Schema() string { return l.schema }

var types = []string{"text", "text", "text", "int8", "int8", "int8", "text", "text", "text", "text", "text", "text",
	"int8", "text", "int8", "int8", "int8", "int8", "int8", "int8", "int8", "text", "text", "text", "int8", "int8"}

const chunk = 5000

var hourTypes = []string{"int8", "int8", "text", "text", "text", "text", "int8", "int8", "int8", "int8", "int8", "int8", "int8", "int8", "int8", "int8", "int8"}

// columns turns n rows of values into one array per column, typed as in
// types, for INSERT … SELECT FROM unnest(…).
func columns(types []string, n int, row func(i int) []any) []any {
	cols := make([]any, len(types))
	for c, t := range types {
		if t == "text" {
			cols[c] = make([]string, n)
		} else {
			cols[c] = make([]int64, n)
		}
	}
	for i := range n {
		for c, v := range row(i) {
			switch v := v.(type) {
			case string:
				cols[c].([]string)[i] = v
			case int64:
				cols[c].([]int64)[i] = v
			}
		}
	}
	return cols
}

func unnest(types []string) string {
	var ph []string
	for i, t := range types {
		ph = append(ph, fmt.Sprintf("$%d::%s[]", i+1, t))
	}
	return "unnest(" + strings.Join(ph, ", ") + ")"
}

// Append stores events in one transaction, ignoring known keys, and adds
// the new ones to the hourly rollups in the same transaction. Events are
// written in key order so concurrent writers wait rather than deadlock.
//
// The first try COPYs the batch straight into the table: the common case,
// every event new. A key already stored, or twice in the batch, fails the
// COPY on the unique key; the try is rolled back and the batch runs again
// as INSERT … ON CONFLICT DO NOTHING RETURNING key, which says which events
// were new. A replayed batch fails at its first row, so that try is cheap.
func (l *Ledger) Append(ctx context.Context, events []billing.Event) error {
	if len(events) == 0 {
		return nil
	}
	sorted := slices.Clone(events)
	// Stable: of two events with one key, the first in the batch is stored.
	slices.SortStableFunc(sorted, func(a, b billing.Event) int { return strings.Compare(a.Key, b.Key) })
	n, err := l.copyNew(ctx, sorted)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == uniqueViolation {
		n, err = l.insertNew(ctx, sorted)
	}
	if err != nil {
		return fmt.Errorf("pgledger: append: %w", err)
	}
	l.appended.Add(n)
	l.dups.Add(int64(len(events)) - n)
	return nil
}

// uniqueViolation is PostgreSQL's SQLSTATE unique_violation.
const uniqueViolation = "23505"

var columnNames = strings.Split(ledgersql.Columns, ", ")

// copyNew stores sorted and their rollups with COPY, in one transaction.
// It fails with a unique violation unless every key is new and distinct.
func (l *Ledger) copyNew(ctx context.Context, sorted []billing.Event) (int64, error) {
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		vals := make([]any, 0, ledgersql.NumColumns)
		_, err := tx.CopyFrom(ctx, pgx.Identifier{l.schema, "usage_events"}, columnNames,
			pgx.CopyFromSlice(len(sorted), func(i int) ([]any, error) {
				// pgx encodes a row before asking for the next: vals can be reused.
				vals = ledgersql.AppendValues(vals[:0], &sorted[i])
				return vals, nil
			}))
		if err != nil {
			return err
		}
		return l.addHours(ctx, tx, ledgersql.Aggregate(sorted, nil))
	})
	if err != nil {
		return 0, err
	}
	return int64(len(sorted)), nil
}

// insertNew stores the events of sorted whose keys are new and their
// rollups, in one transaction, and returns how many it stored.
func (l *Ledger) insertNew(ctx context.Context, sorted []billing.Event) (int64, error) {
	q := "INSERT INTO " + l.table + " (" + ledgersql.Columns + ") SELECT * FROM " + unnest(types) + " ON CONFLICT (key) DO NOTHING RETURNING key"
	inserted := make(map[string]bool, len(sorted))
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		for i := 0; i < len(sorted); i += chunk {
			part := sorted[i:min(i+chunk, len(sorted))]
			rows, err := tx.Query(ctx, q, columns(types, len(part), func(j int) []any { return ledgersql.Values(&part[j]) })...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var k string
				if err := rows.Scan(&k); err != nil {
					rows.Close()
					return err
				}
				inserted[k] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return l.addHours(ctx, tx, ledgersql.Aggregate(sorted, inserted))
	})
	if err != nil {
		return 0, err
	}
	return int64(len(inserted)), nil
}

// addHours adds hours to the hourly rollup table.
func (l *Ledger) addHours(ctx context.Context, tx pgx.Tx, hours []ledgersql.HourRow) error {
	if len(hours) == 0 {
		return nil
	}
	hq := "INSERT INTO " + l.hours + " AS r (" + ledgersql.RollupTableColumns + ") SELECT * FROM " + unnest(hourTypes) + fmt.Sprintf(ledgersql.RollupUpdate, "r")
	_, err := tx.Exec(ctx, hq, columns(hourTypes, len(hours), func(j int) []any { return hours[j].Values() })...)
	return err
}

// Query calls fn for each matching event, by time then key.
func (l *Ledger) Query(ctx context.Context, f billing.Filter, fn func(billing.Event) error) error {
	q, args := dialect.SelectColumns(l.table, l.cols, f)
	rows, err := l.pool.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("pgledger: query: %w", err)
	}
	defer rows.Close()
	return ledgersql.ReadEvents(rows, f.Kind, fn, "pgledger: query")
}

// Rollup sums events by q.GroupBy.
func (l *Ledger) Rollup(ctx context.Context, q billing.RollupQuery) ([]billing.Row, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	query, args := dialect.RollupOf(l.table, l.hours, q)
	rows, err := l.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("pgledger: rollup: %w", err)
	}
	defer rows.Close()
	return ledgersql.ReadRows(rows, "pgledger: rollup")
}

// Stats counts appended and duplicate events.
func (l *Ledger) Stats() billing.LedgerStats {
	return billing.LedgerStats{Appended: l.appended.Load(), Duplicates: l.dups.Load()}
}

// Close closes the pool.
func (l *Ledger) Close() error {
	l.closeOnce.Do(l.pool.Close)
	return nil
}
