package approval

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/internal/backend/sqlitedb"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/registry"
)

// ErrNotFound is what Take returns when no change of the vendor waits.
var ErrNotFound = errors.New("approval: no change waits for this vendor")

// Change is a vendor change waiting for an operator.
type Change struct {
	Vendor   string          `json:"vendor"`
	Spec     registry.Vendor `json:"spec"`               // what goes live when approved
	Breaking []string        `json:"breaking,omitempty"` // why an operator must approve
	Tools    []string        `json:"tools,omitempty"`    // the tools the new spec serves
	Rejected []string        `json:"rejected,omitempty"` // its tools left out, with why
	By       auth.Principal  `json:"by"`                 // who submitted it
	At       time.Time       `json:"at"`                 // when
}

// Store keeps pending changes, at most one per vendor.
type Store interface {
	// Put stores c, replacing a change of the same vendor that waits.
	Put(ctx context.Context, c Change) error
	// List returns the waiting changes, by vendor.
	List(ctx context.Context) ([]Change, error)
	// Take removes the vendor's waiting change and returns it; of callers
	// taking at once (on any hub) exactly one gets it, the others
	// ErrNotFound.
	Take(ctx context.Context, vendor string) (Change, error)
	Close() error
}

// Memory is a [Store] in process memory: changes are lost on restart.
type Memory struct {
	mu sync.Mutex
	m  map[string]Change
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{m: map[string]Change{}} }

func (s *Memory) Put(_ context.Context, c Change) error {
	if c.Vendor == "" {
		return errors.New("approval: a change names its vendor")
	}
	b, err := json.Marshal(c) // a copy that shares nothing with the caller's
	if err != nil {
		return fmt.Errorf("approval: %v", err)
	}
	var cp Change
	_ = json.Unmarshal(b, &cp)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[c.Vendor] = cp
	return nil
}

func (s *Memory) List(context.Context) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Change, 0, len(s.m))
	for _, c := range s.m {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Vendor, b.Vendor) })
	return out, nil
}

func (s *Memory) Take(_ context.Context, vendor string) (Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[vendor]
	if !ok {
		return Change{}, fmt.Errorf("%w: %q", ErrNotFound, vendor)
	}
	delete(s.m, vendor)
	return c, nil
}

func (s *Memory) Close() error { return nil }

// SQLite is a [Store] in a table (pending_vendor_changes) of a SQLite
// file: the embedded registry database, next to the vendors it changes.
type SQLite struct{ db *sql.DB }

var _ Store = (*SQLite)(nil)

// OpenSQLite opens the file at path (the registry's registry.db),
// creating it and the table if missing. The registry store may have the
// same file open: the file runs in WAL mode with a busy timeout.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	db, err := sqlitedb.Open(path, nil)
	if err != nil {
		return nil, fmt.Errorf("approval: %w", err)
	}
	_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS pending_vendor_changes (
		vendor TEXT PRIMARY KEY, change TEXT NOT NULL, at INTEGER NOT NULL)`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("approval: open %s: %v", path, err)
	}
	return &SQLite{db: db}, nil
}

func (s *SQLite) Put(ctx context.Context, c Change) error {
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

func (s *SQLite) List(ctx context.Context) ([]Change, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT change FROM pending_vendor_changes ORDER BY vendor`)
	if err != nil {
		return nil, fmt.Errorf("approval: list: %v", err)
	}
	defer rows.Close()
	out := []Change{}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("approval: list: %v", err)
		}
		c, err := Decode([]byte(b))
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

func (s *SQLite) Take(ctx context.Context, vendor string) (Change, error) {
	var b string
	err := s.db.QueryRowContext(ctx, `DELETE FROM pending_vendor_changes WHERE vendor = ? RETURNING change`, vendor).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return Change{}, fmt.Errorf("%w: %q", ErrNotFound, vendor)
	}
	if err != nil {
		return Change{}, fmt.Errorf("approval: take the change of %s: %v", vendor, err)
	}
	return Decode([]byte(b))
}

func (s *SQLite) Close() error { return s.db.Close() }

// Decode reads a stored change (JSON, as [registry.EncodeSpec] writes it).
func Decode(b []byte) (Change, error) {
	var c Change
	if err := json.Unmarshal(b, &c); err != nil {
		return Change{}, fmt.Errorf("approval: a stored change does not read: %v", err)
	}
	c.At = c.At.UTC()
	return c, nil
}
