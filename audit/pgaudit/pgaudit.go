package pgaudit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolhub/toolhub/audit"
	"github.com/toolhub/toolhub/internal/x/pgschema"
)

// DefaultSchema holds the table when [Options].Schema is empty.
const DefaultSchema = pgschema.DefaultSchema

// Options tune a [Log]. A nil *Options means every default.
type Options struct {
	// Schema holds the audit_log table; created if missing. Empty means
	// [DefaultSchema].
	Schema string
	// MaxConns caps the connection pool. Zero means 2 (the audit log is
	// written by operators and vendors, not by every call).
	MaxConns int32
}

// Log is an [audit.Log] in a PostgreSQL schema.
type Log struct {
	pool   *pgxpool.Pool
	where  string
	insert string
	recent string
	all    string
}

var _ audit.Log = (*Log)(nil)

var migrations = [][]string{
	{ // 1
		`CREATE TABLE {s}.audit_log (
			seq    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			at     timestamptz NOT NULL,
			who    jsonb NOT NULL,
			action text NOT NULL,
			target text NOT NULL,
			before json,
			after  json
		)`,
		`CREATE FUNCTION {s}.audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP;
		END $$`,
		`CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON {s}.audit_log
			FOR EACH ROW EXECUTE FUNCTION {s}.audit_log_append_only()`,
		`CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON {s}.audit_log
			FOR EACH STATEMENT EXECUTE FUNCTION {s}.audit_log_append_only()`,
	},
}

// Open connects to the database at dsn and creates or migrates the
// audit_log table in the configured schema.
func Open(ctx context.Context, dsn string, opts *Options) (*Log, error) {
	if opts == nil {
		opts = &Options{}
	}
	tb, err := pgschema.OpenTable(ctx, dsn, opts.Schema, "audit_log", cmp.Or(opts.MaxConns, 2), migrations)
	if err != nil {
		return nil, fmt.Errorf("pgaudit: %w", err)
	}
	t := tb.Name
	const cols = `at, who, action, target, before, after`
	return &Log{
		pool:   tb.Pool,
		where:  tb.Where,
		insert: `INSERT INTO ` + t + ` (` + cols + `) VALUES ($1, $2, $3, $4, $5, $6)`,
		recent: `SELECT ` + cols + ` FROM (SELECT seq, ` + cols + ` FROM ` + t + ` ORDER BY seq DESC LIMIT $1) r ORDER BY seq`,
		all:    `SELECT ` + cols + ` FROM ` + t + ` ORDER BY seq`,
	}, nil
}

// Close closes the log's connections. It may be called more than once.
func (l *Log) Close() error {
	l.pool.Close()
	return nil
}

func (l *Log) Append(ctx context.Context, e audit.Entry) error {
	e = audit.Sanitize(e)
	who, err := json.Marshal(e.Who)
	if err != nil {
		return fmt.Errorf("pgaudit: %w", err)
	}
	if _, err := l.pool.Exec(ctx, l.insert, e.At, who, e.Action, e.Target, rawOrNil(e.Before), rawOrNil(e.After)); err != nil {
		return fmt.Errorf("pgaudit: append to %s: %w", l.where, err)
	}
	return nil
}

func (l *Log) Recent(ctx context.Context, n int) ([]audit.Entry, error) {
	var rows pgx.Rows
	var err error
	if n > 0 {
		rows, err = l.pool.Query(ctx, l.recent, n)
	} else {
		rows, err = l.pool.Query(ctx, l.all)
	}
	if err != nil {
		return nil, fmt.Errorf("pgaudit: read %s: %w", l.where, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Entry, error) {
		var e audit.Entry
		var who, before, after []byte
		if err := r.Scan(&e.At, &who, &e.Action, &e.Target, &before, &after); err != nil {
			return e, err
		}
		e.At = e.At.UTC()
		if before != nil {
			e.Before = before
		}
		if after != nil {
			e.After = after
		}
		return e, json.Unmarshal(who, &e.Who)
	})
	if err != nil {
		return nil, fmt.Errorf("pgaudit: read %s: %w", l.where, err)
	}
	return out, nil
}

// rawOrNil passes JSON as text (nil for SQL NULL), so a json column keeps
// it as written.
func rawOrNil(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
