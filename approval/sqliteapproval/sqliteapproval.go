// Package sqliteapproval is the embedded [approval.Store]: vendor changes
// waiting for an operator, in a table of the registry's SQLite file
// (data/registry.db; internal/backend opens it when postgres is not set).
package sqliteapproval

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/internal/x/sqlitedb"
	"github.com/toolhub/toolhub/registry"
)

// Store is an [approval.Store] in a table (pending_vendor_changes) of a SQLite
// file: the embedded registry database, next to the vendors it changes.
type Store struct{ db *sql.DB }

var _ approval.Store = (*Store)(nil)

// Open opens the file at path (the registry's registry.db),
// creating it and the table if missing. The registry store may have the
// same file open: the file runs in WAL mode with a busy timeout.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.OpenTables(ctx, path, nil, `CREATE TABLE IF NOT EXISTS pending_vendor_changes (
		vendor TEXT PRIMARY KEY, change TEXT NOT NULL, at INTEGER NOT NULL)`)
	if err != nil {
		return nil, fmt.Errorf("approval: %w", err)
	}
	return &Store{db: db}, nil
}

func (s *Store) Put(ctx context.Context, c approval.Change) error {
	if c.Vendor == "" {
		return errors.New("approval: a change names its vendor")
	}
	b, err := registry.EncodeSpec(c)
	if err != nil {
		return fmt.Errorf("approval: %v", err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO pending_vendor_changes (vendor, change, at) VALUES (?, ?, ?)
		ON CONFLICT (vendor) DO UPDATE SET change = excluded.change, at = excluded.at`, c.Vendor, b, c.At.UnixMicro())
	if err != nil {
		return fmt.Errorf("approval: store the change of %s: %v", c.Vendor, err)
	}
	return nil
}

func (s *Store) List(ctx context.Context) ([]approval.Change, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT change FROM pending_vendor_changes ORDER BY vendor`)
	if err != nil {
		return nil, fmt.Errorf("approval: list: %v", err)
	}
	defer rows.Close()
	out := []approval.Change{}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("approval: list: %v", err)
		}
		c, err := approval.Decode([]byte(b))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("approval: list: %v", err)
	}
	return out, nil
}

func (s *Store) Take(ctx context.Context, vendor string) (approval.Change, error) {
	var b string
	err := s.db.QueryRowContext(ctx, `DELETE FROM pending_vendor_changes WHERE vendor = ? RETURNING change`, vendor).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return approval.Change{}, fmt.Errorf("%w: %q", approval.ErrNotFound, vendor)
	}
	if err != nil {
		return approval.Change{}, fmt.Errorf("approval: take the change of %s: %v", vendor, err)
	}
	return approval.Decode([]byte(b))
}

func (s *Store) Close() error { return s.db.Close() }
