package pgapproval

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/internal/x/pgschema"
	"github.com/toolhub/toolhub/registry"
)

// DefaultSchema holds the table when [Options].Schema is empty.
const DefaultSchema = pgschema.DefaultSchema

// Options tune a [Store]. A nil *Options means every default.
type Options struct {
	// Schema holds the table; created if missing. Empty means
	// [DefaultSchema].
	Schema string
	// MaxConns caps the connection pool. Zero means 2.
	MaxConns int32
}

// Store is an [approval.Store] in a PostgreSQL schema.
type Store struct {
	pool            *pgxpool.Pool
	where           string
	put, list, take string
}

var _ approval.Store = (*Store)(nil)

var migrations = [][]string{
	{ // 1
		`CREATE TABLE {s}.pending_vendor_changes (
			vendor text COLLATE "C" PRIMARY KEY,
			change json NOT NULL,
			at     timestamptz NOT NULL
		)`,
	},
}

// Open connects to the database at dsn and creates or migrates the table
// in the configured schema.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	tb, err := pgschema.OpenTable(ctx, dsn, opts.Schema, "pending_vendor_changes", cmp.Or(opts.MaxConns, 2), migrations)
	if err != nil {
		return nil, fmt.Errorf("pgapproval: %w", err)
	}
	t := tb.Name
	return &Store{
		pool:  tb.Pool,
		where: tb.Where,
		put: `INSERT INTO ` + t + ` (vendor, change, at) VALUES ($1, $2, $3)
			ON CONFLICT (vendor) DO UPDATE SET change = excluded.change, at = excluded.at`,
		list: `SELECT change::text FROM ` + t + ` ORDER BY vendor`,
		take: `DELETE FROM ` + t + ` WHERE vendor = $1 RETURNING change::text`,
	}, nil
}

// Close closes the store's connections. It may be called more than once.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

func (s *Store) Put(ctx context.Context, c approval.Change) error {
	if c.Vendor == "" {
		return errors.New("approval: a change names its vendor")
	}
	b, err := registry.EncodeSpec(c)
	if err != nil {
		return fmt.Errorf("pgapproval: %w", err)
	}
	if _, err := s.pool.Exec(ctx, s.put, c.Vendor, b, c.At); err != nil {
		return fmt.Errorf("pgapproval: store the change of %s in %s: %w", c.Vendor, s.where, err)
	}
	return nil
}

func (s *Store) List(ctx context.Context) ([]approval.Change, error) {
	rows, err := s.pool.Query(ctx, s.list)
	if err != nil {
		return nil, fmt.Errorf("pgapproval: list %s: %w", s.where, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (approval.Change, error) {
		var b string
		if err := r.Scan(&b); err != nil {
			return approval.Change{}, err
		}
		return approval.Decode([]byte(b))
	})
	if err != nil {
		return nil, fmt.Errorf("pgapproval: list %s: %w", s.where, err)
	}
	if out == nil {
		out = []approval.Change{}
	}
	return out, nil
}

func (s *Store) Take(ctx context.Context, vendor string) (approval.Change, error) {
	var b string
	err := s.pool.QueryRow(ctx, s.take, vendor).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return approval.Change{}, fmt.Errorf("%w: %q", approval.ErrNotFound, vendor)
	}
	if err != nil {
		return approval.Change{}, fmt.Errorf("pgapproval: take the change of %s from %s: %w", vendor, s.where, err)
	}
	return approval.Decode([]byte(b))
}
