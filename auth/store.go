package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/internal/backend/sqlitedb"
)

// MemoryStore is a [Store] in process memory.
type MemoryStore struct {
	mu   sync.Mutex
	keys map[string]Key
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{keys: map[string]Key{}} }

func (s *MemoryStore) PutKey(_ context.Context, k Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[k.ID] = k
	return nil
}

func (s *MemoryStore) GetKey(_ context.Context, id string) (Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return Key{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return k, nil
}

func (s *MemoryStore) ListKeys(_ context.Context) ([]Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Key, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Key) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *MemoryStore) Close() error { return nil }

// SQLiteStore is a [Store] in a SQLite file.
type SQLiteStore struct{ db *sql.DB }

var _ Store = (*SQLiteStore)(nil)

// OpenSQLite opens (creating if needed) the key store at path.
func OpenSQLite(ctx context.Context, path string) (*SQLiteStore, error) {
	db, err := sqlitedb.Open(path, nil)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS api_keys (
		id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, tenant TEXT NOT NULL, vendor TEXT NOT NULL,
		secret_hash TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER, revoked_at INTEGER)`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("auth: open %s: %v", path, err)
	}
	return &SQLiteStore{db: db}, nil
}

func (s *SQLiteStore) PutKey(ctx context.Context, k Key) error {
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

func (s *SQLiteStore) GetKey(ctx context.Context, id string) (Key, error) {
	ks, err := s.query(ctx, `WHERE id = ?`, id)
	if err != nil {
		return Key{}, err
	}
	if len(ks) == 0 {
		return Key{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return ks[0], nil
}

func (s *SQLiteStore) ListKeys(ctx context.Context) ([]Key, error) {
	return s.query(ctx, `ORDER BY id`)
}

func (s *SQLiteStore) query(ctx context.Context, where string, args ...any) ([]Key, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, role, tenant, vendor, secret_hash, created_at, expires_at, revoked_at FROM api_keys `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("auth: read keys: %v", err)
	}
	defer rows.Close()
	var out []Key
	for rows.Next() {
		var k Key
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

func (s *SQLiteStore) Close() error { return s.db.Close() }

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
