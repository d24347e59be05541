// Package sqlitekeys is the embedded [auth.Store]: API keys in a SQLite
// file (data/keys.db; internal/backend opens it when postgres is not set).
package sqlitekeys

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/internal/x/sqlitedb"
)

// Store is an [auth.Store] in a SQLite file.
type Store struct{ db *sql.DB }

var _ auth.Store = (*Store)(nil)

// Open opens (creating if needed) the key store at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.OpenTables(ctx, path, nil, `CREATE TABLE IF NOT EXISTS api_keys (
		id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, tenant TEXT NOT NULL, vendor TEXT NOT NULL,
		secret_hash TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER, revoked_at INTEGER)`)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return &Store{db: db}, nil
}

func (s *Store) PutKey(ctx context.Context, k auth.Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO api_keys VALUES (?,?,?,?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET name=excluded.name, expires_at=excluded.expires_at, revoked_at=excluded.revoked_at`,
		k.ID, k.Name, k.Role, k.Tenant, k.Vendor, k.SecretHash, k.CreatedAt.UnixMicro(), micros(k.ExpiresAt), micros(k.RevokedAt))
	if err != nil {
		return fmt.Errorf("auth: store key %s: %v", k.ID, err)
	}
	return nil
}

func (s *Store) GetKey(ctx context.Context, id string) (auth.Key, error) {
	ks, err := s.query(ctx, `WHERE id = ?`, id)
	if err != nil {
		return auth.Key{}, err
	}
	if len(ks) == 0 {
		return auth.Key{}, fmt.Errorf("%w: %q", auth.ErrNotFound, id)
	}
	return ks[0], nil
}

func (s *Store) ListKeys(ctx context.Context) ([]auth.Key, error) {
	return s.query(ctx, `ORDER BY id`)
}

func (s *Store) query(ctx context.Context, where string, args ...any) ([]auth.Key, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, role, tenant, vendor, secret_hash, created_at, expires_at, revoked_at FROM api_keys `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("auth: read keys: %v", err)
	}
	defer rows.Close()
	var out []auth.Key
	for rows.Next() {
		var k auth.Key
		var created int64
		var exp, rev sql.NullInt64
		if err := rows.Scan(&k.ID, &k.Name, &k.Role, &k.Tenant, &k.Vendor, &k.SecretHash, &created, &exp, &rev); err != nil {
			return nil, fmt.Errorf("auth: read keys: %v", err)
		}
		k.CreatedAt = time.UnixMicro(created).UTC()
		k.ExpiresAt, k.RevokedAt = fromMicros(exp), fromMicros(rev)
		out = append(out, k)
	}
	return out, errors.Join(rows.Err())
}

func (s *Store) Close() error { return s.db.Close() }

func micros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

func fromMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMicro(v.Int64).UTC()
	return &t
}
