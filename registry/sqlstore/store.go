package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolhub/toolhub/internal/x/sqlitedb"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/internal/specrows"
)

// Options tune a [Store]. A nil *Options means every default.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection or process before it fails with "database is locked".
	// Zero means sqlitedb.DefaultBusyTimeout (10 s).
	BusyTimeout time.Duration
	// MaxOpenConns caps the connections to the file. Under WAL readers run
	// side by side and writers take turns. Zero means 4.
	MaxOpenConns int
	// Now stamps vendor versions (UpdatedAt). Nil means time.Now.
	Now func() time.Time
}

// Store is a [registry.Store] in one SQLite file.
type Store struct {
	db   *sql.DB
	path string
	now  func() time.Time

	closeOnce sync.Once
	closeErr  error
}

var _ registry.Store = (*Store)(nil)

// Open opens the store in the SQLite file at path, creating the file and
// its tables if they are missing and migrating older tables to this
// version. The file's directory must exist. Several Stores, in one process
// or several, may open the same file.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("sqlstore: open %q: want a file path (for a store in memory, use registry.NewMemoryStore)", path)
	}
	db, err := sqlitedb.Open(path, &sqlitedb.Options{BusyTimeout: opts.BusyTimeout, MaxOpenConns: opts.MaxOpenConns})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	abs, _ := filepath.Abs(path) // sqlitedb.Open made it absolute already
	s := &Store{db: db, path: abs, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: open %s: %w", abs, err)
	}
	return s, nil
}

// Path is the absolute path of the store's file.
func (s *Store) Path() string { return s.path }

// Close closes the file. Calls after the first return the first's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.db.Close() })
	return s.closeErr
}

// write runs fn in one read-write transaction (BEGIN IMMEDIATE).
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *Store) PutVendor(ctx context.Context, v registry.Vendor, expect int64, by string) (registry.VendorRecord, error) {
	if err := v.Validate(); err != nil {
		return registry.VendorRecord{}, err
	}
	spec, err := registry.EncodeSpec(v)
	if err != nil {
		return registry.VendorRecord{}, fmt.Errorf("sqlstore: put vendor %q: %w", v.ID, err)
	}
	var r registry.VendorRecord
	err = s.write(ctx, func(tx *sql.Tx) error {
		var cur int64
		if err := tx.QueryRowContext(ctx,
			`SELECT COALESCE(MAX(version), 0) FROM vendor_versions WHERE id = ?`, v.ID).Scan(&cur); err != nil {
			return err
		}
		if expect >= 0 && expect != cur {
			return fmt.Errorf("%w: vendor %q is at version %d, not %d", registry.ErrVersionConflict, v.ID, cur, expect)
		}
		// Stamped under the write lock, so versions are in time order.
		at := s.now().UTC().Truncate(time.Microsecond)
		_, err := tx.ExecContext(ctx,
			`INSERT INTO vendor_versions (id, version, spec, updated_at, updated_by) VALUES (?, ?, ?, ?, ?)`,
			v.ID, cur+1, spec, at.UnixMicro(), by)
		if isConstraint(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY) {
			// Not reachable while every writer begins IMMEDIATE; kept so
			// that a writer which does not still gets a conflict, not a
			// constraint error.
			return fmt.Errorf("%w: vendor %q was changed by another writer", registry.ErrVersionConflict, v.ID)
		}
		if err != nil {
			return err
		}
		r = registry.VendorRecord{Version: cur + 1, UpdatedAt: at, UpdatedBy: by}
		return nil
	})
	if errors.Is(err, registry.ErrVersionConflict) {
		return registry.VendorRecord{}, err
	}
	if err != nil {
		return registry.VendorRecord{}, fmt.Errorf("sqlstore: put vendor %q: %w", v.ID, err)
	}
	if err := json.Unmarshal([]byte(spec), &r.Vendor); err != nil {
		return registry.VendorRecord{}, fmt.Errorf("sqlstore: put vendor %q: %w", v.ID, err)
	}
	return r, nil
}

const vendorColumns = `id, version, spec, updated_at, updated_by`

func scanVendor(row specrows.Row) (registry.VendorRecord, error) {
	var (
		r    registry.VendorRecord
		id   string
		spec []byte
		at   int64
	)
	if err := row.Scan(&id, &r.Version, &spec, &at, &r.UpdatedBy); err != nil {
		return r, err
	}
	r.UpdatedAt = time.UnixMicro(at).UTC()
	return r, specrows.DecodeVendor(&r, id, spec)
}

func (s *Store) GetVendor(ctx context.Context, id string) (registry.VendorRecord, error) {
	r, err := scanVendor(s.db.QueryRowContext(ctx,
		`SELECT `+vendorColumns+` FROM vendor_versions WHERE id = ? ORDER BY version DESC LIMIT 1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.VendorRecord{}, fmt.Errorf("%w: vendor %q", registry.ErrNotFound, id)
	}
	if err != nil {
		return registry.VendorRecord{}, fmt.Errorf("sqlstore: get vendor %q: %w", id, err)
	}
	return r, nil
}

func (s *Store) VendorHistory(ctx context.Context, id string) ([]registry.VendorRecord, error) {
	out, err := s.queryVendors(ctx,
		`SELECT `+vendorColumns+` FROM vendor_versions WHERE id = ? ORDER BY version`, id)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: vendor history %q: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: vendor %q", registry.ErrNotFound, id)
	}
	return out, nil
}

func (s *Store) ListVendors(ctx context.Context) ([]registry.VendorRecord, error) {
	out, err := s.queryVendors(ctx, `SELECT `+vendorColumns+` FROM vendor_versions AS v
		WHERE version = (SELECT MAX(version) FROM vendor_versions WHERE id = v.id)
		ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list vendors: %w", err)
	}
	return out, nil
}

func (s *Store) queryVendors(ctx context.Context, query string, args ...any) ([]registry.VendorRecord, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return specrows.Vendors(rows, scanVendor)
}

func (s *Store) DeleteVendor(ctx context.Context, id string) error {
	return s.delete(ctx, "vendor", `DELETE FROM vendor_versions WHERE id = ?`, id)
}

func (s *Store) delete(ctx context.Context, kind, query, id string) error {
	res, err := s.db.ExecContext(ctx, query, id)
	if err != nil {
		return fmt.Errorf("sqlstore: delete %s %q: %w", kind, id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlstore: delete %s %q: %w", kind, id, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s %q", registry.ErrNotFound, kind, id)
	}
	return nil
}

func (s *Store) PutTenant(ctx context.Context, t registry.Tenant) error {
	if err := t.Validate(); err != nil {
		return err
	}
	return s.put(ctx, "tenant",
		`INSERT INTO tenants (id, spec) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET spec = excluded.spec`, t.ID, t)
}

// put stores spec's JSON under id with query (id, spec).
func (s *Store) put(ctx context.Context, kind, query, id string, spec any) error {
	text, err := registry.EncodeSpec(spec)
	if err == nil {
		_, err = s.db.ExecContext(ctx, query, id, text)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: put %s %q: %w", kind, id, err)
	}
	return nil
}

func (s *Store) GetTenant(ctx context.Context, id string) (registry.Tenant, error) {
	var (
		t    registry.Tenant
		spec []byte
	)
	err := s.db.QueryRowContext(ctx, `SELECT spec FROM tenants WHERE id = ?`, id).Scan(&spec)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("%w: tenant %q", registry.ErrNotFound, id)
	}
	if err == nil {
		err = json.Unmarshal(spec, &t)
	}
	if err != nil {
		return registry.Tenant{}, fmt.Errorf("sqlstore: get tenant %q: %w", id, err)
	}
	return t, nil
}

func (s *Store) ListTenants(ctx context.Context) ([]registry.Tenant, error) {
	out, err := listSpecs[registry.Tenant](ctx, s.db, `SELECT id, spec FROM tenants ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list tenants: %w", err)
	}
	return out, nil
}

func (s *Store) DeleteTenant(ctx context.Context, id string) error {
	return s.delete(ctx, "tenant", `DELETE FROM tenants WHERE id = ?`, id)
}

func (s *Store) PutCapability(ctx context.Context, c registry.Capability) error {
	if err := c.Compile(); err != nil {
		return err
	}
	// The spec fields only: compiled schemas are rebuilt by whoever serves it.
	return s.put(ctx, "capability",
		`INSERT INTO capabilities (name, spec) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET spec = excluded.spec`, c.Name, c)
}

func (s *Store) ListCapabilities(ctx context.Context) ([]registry.Capability, error) {
	out, err := listSpecs[registry.Capability](ctx, s.db, `SELECT name, spec FROM capabilities ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list capabilities: %w", err)
	}
	return out, nil
}

func (s *Store) DeleteCapability(ctx context.Context, name string) error {
	return s.delete(ctx, "capability", `DELETE FROM capabilities WHERE name = ?`, name)
}

// listSpecs reads (key, spec) rows into specs.
func listSpecs[T any](ctx context.Context, db *sql.DB, query string) ([]T, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return specrows.Specs[T](rows)
}

func isConstraint(err error, code int) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == code
}

func (s *Store) PutToolPin(ctx context.Context, p registry.ToolPin) error {
	spec, err := registry.EncodeSpec(p)
	if err == nil {
		_, err = s.db.ExecContext(ctx, `INSERT INTO tool_pins (vendor, tool, state, hash, spec) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (vendor, tool, state) DO UPDATE SET hash = excluded.hash, spec = excluded.spec`, p.Vendor, p.Tool, p.State, p.Hash, spec)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: put tool pin %q/%q: %w", p.Vendor, p.Tool, err)
	}
	return nil
}

func (s *Store) ToolPins(ctx context.Context, vendor string) ([]registry.ToolPin, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT vendor, tool, state, hash, spec FROM tool_pins
		WHERE ? = '' OR vendor = ? ORDER BY vendor, tool, state`, vendor, vendor)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: tool pins: %w", err)
	}
	defer rows.Close()
	return specrows.Pins(rows)
}

func (s *Store) DeleteToolPin(ctx context.Context, vendor, tool, state string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM tool_pins WHERE vendor = ? AND tool = ? AND state = ?`, vendor, tool, state); err != nil {
		return fmt.Errorf("sqlstore: delete tool pin %q/%q: %w", vendor, tool, err)
	}
	return nil
}

func (s *Store) DeleteVendorPins(ctx context.Context, vendor string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM tool_pins WHERE vendor = ?`, vendor); err != nil {
		return fmt.Errorf("sqlstore: delete tool pins of %q: %w", vendor, err)
	}
	return nil
}
