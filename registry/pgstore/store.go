package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolhub/toolhub/internal/x/pgdb"

	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/internal/specrows"
)

// DefaultSchema holds the tables when [Options].Schema is empty.
const DefaultSchema = "toolhub"

// Options tune a [Store]. A nil *Options means every default.
type Options struct {
	// Schema holds the store's tables; it is created if missing. Empty
	// means [DefaultSchema]. Hubs that share a registry use one schema.
	Schema string
	// MaxConns caps the connection pool. Zero means the DSN's
	// pool_max_conns, or else pgxpool's default (4, or the number of CPUs
	// if more). [Store.Listen] uses one more connection of its own.
	MaxConns int32
	// Now stamps vendor versions (UpdatedAt). Nil means time.Now.
	Now func() time.Time
	// Logger gets what [Store.Listen] cannot return: a lost connection, a
	// notification it cannot read. Nil means slog.Default().
	Logger *slog.Logger
}

// Store is a [registry.Store] in a PostgreSQL schema.
type Store struct {
	pool   *pgxpool.Pool
	conn   *pgx.ConnConfig // for Listen's own connection
	schema string
	where  string // "host:port/database schema \"name\"", for messages
	q      queries
	now    func() time.Time
	log    *slog.Logger
}

var _ registry.Store = (*Store)(nil)

// Open connects to the database at dsn (a URL or key=value string, as
// pgx takes it) and creates or migrates the store's tables in the
// configured schema. Several Stores, in one process or several, may open
// the same schema: they are one registry.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	pool, cfg, err := pgdb.Open(ctx, dsn, &pgdb.Options{Schema: schema, MaxConns: opts.MaxConns})
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	where := pgdb.Where(cfg, schema)
	s := &Store{
		pool:   pool,
		conn:   cfg.ConnConfig.Copy(),
		schema: schema,
		where:  where,
		q:      newQueries(pgx.Identifier{schema}.Sanitize()),
		now:    opts.Now,
		log:    opts.Logger,
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", where, err)
	}
	return s, nil
}

// Schema is the schema that holds the store's tables.
func (s *Store) Schema() string { return s.schema }

// Close closes the store's connections. It may be called more than once.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// queries are the store's SQL, with table names qualified by the schema
// (so nothing depends on a connection's search_path).
type queries struct {
	currentVersion, insertVendor, getVendor, vendorHistory, listVendors, deleteVendor string
	putTenant, getTenant, listTenants, deleteTenant                                   string
	putCapability, listCapabilities, deleteCapability                                 string
}

func newQueries(schema string) queries {
	s := func(q string) string { return strings.ReplaceAll(q, "{s}", schema) }
	const vendorColumns = `id, version, spec, updated_at, updated_by`
	return queries{
		currentVersion:   s(`SELECT COALESCE(MAX(version), 0) FROM {s}.vendor_versions WHERE id = $1`),
		insertVendor:     s(`INSERT INTO {s}.vendor_versions (` + vendorColumns + `) VALUES ($1, $2, $3, $4, $5)`),
		getVendor:        s(`SELECT ` + vendorColumns + ` FROM {s}.vendor_versions WHERE id = $1 ORDER BY version DESC LIMIT 1`),
		vendorHistory:    s(`SELECT ` + vendorColumns + ` FROM {s}.vendor_versions WHERE id = $1 ORDER BY version`),
		listVendors:      s(`SELECT DISTINCT ON (id) ` + vendorColumns + ` FROM {s}.vendor_versions ORDER BY id, version DESC`),
		deleteVendor:     s(`DELETE FROM {s}.vendor_versions WHERE id = $1`),
		putTenant:        s(`INSERT INTO {s}.tenants (id, spec) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET spec = EXCLUDED.spec`),
		getTenant:        s(`SELECT spec FROM {s}.tenants WHERE id = $1`),
		listTenants:      s(`SELECT id, spec FROM {s}.tenants ORDER BY id`),
		deleteTenant:     s(`DELETE FROM {s}.tenants WHERE id = $1`),
		putCapability:    s(`INSERT INTO {s}.capabilities (name, spec) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec`),
		listCapabilities: s(`SELECT name, spec FROM {s}.capabilities ORDER BY name`),
		deleteCapability: s(`DELETE FROM {s}.capabilities WHERE name = $1`),
	}
}

// change runs fn in a transaction that also notifies [Channel] of the
// change, so listeners hear of it exactly when it commits.
func (s *Store) change(ctx context.Context, kind, id string, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, kind+":"+id)
		return err
	})
}

func (s *Store) PutVendor(ctx context.Context, v registry.Vendor, expect int64, by string) (registry.VendorRecord, error) {
	if err := v.Validate(); err != nil {
		return registry.VendorRecord{}, err
	}
	spec, err := registry.EncodeSpec(v)
	if err != nil {
		return registry.VendorRecord{}, fmt.Errorf("pgstore: put vendor %q: %w", v.ID, err)
	}
	for {
		var r registry.VendorRecord
		err := s.change(ctx, KindVendor, v.ID, func(tx pgx.Tx) error {
			if err := s.lockVendor(ctx, tx, v.ID); err != nil {
				return err
			}
			var cur int64
			if err := tx.QueryRow(ctx, s.q.currentVersion, v.ID).Scan(&cur); err != nil {
				return err
			}
			if expect >= 0 && expect != cur {
				return fmt.Errorf("%w: vendor %q is at version %d, not %d", registry.ErrVersionConflict, v.ID, cur, expect)
			}
			r = registry.VendorRecord{Version: cur + 1, UpdatedAt: s.now().UTC().Truncate(time.Microsecond), UpdatedBy: by}
			_, err := tx.Exec(ctx, s.q.insertVendor, v.ID, r.Version, spec, r.UpdatedAt, by)
			return err
		})
		if isUniqueViolation(err) {
			// Another writer stored version r.Version between our read and
			// our insert (possible only for a writer that skips the lock).
			// For "any version" that is no conflict: read again.
			if expect < 0 && ctx.Err() == nil {
				continue
			}
			return registry.VendorRecord{}, fmt.Errorf("%w: vendor %q is at version %d or later, not %d", registry.ErrVersionConflict, v.ID, r.Version, expect)
		}
		if errors.Is(err, registry.ErrVersionConflict) {
			return registry.VendorRecord{}, err
		}
		if err == nil {
			err = json.Unmarshal([]byte(spec), &r.Vendor)
		}
		if err != nil {
			return registry.VendorRecord{}, fmt.Errorf("pgstore: put vendor %q: %w", v.ID, err)
		}
		return r, nil
	}
}

// lockVendor serializes, until tx ends, the writes to one vendor: a put's
// read of the current version and its insert, and a delete. Without it, a
// put racing a delete could leave the vendor at its next version with no
// history before it (the delete's statement does not see a row inserted
// after it began).
func (s *Store) lockVendor(ctx context.Context, tx pgx.Tx, id string) error {
	// Ids hold no '/', so schema/id names one vendor of one schema.
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "toolhub registry vendor "+s.schema+"/"+id)
	return err
}

func scanVendor(row specrows.Row) (registry.VendorRecord, error) {
	var (
		r    registry.VendorRecord
		id   string
		spec []byte
	)
	if err := row.Scan(&id, &r.Version, &spec, &r.UpdatedAt, &r.UpdatedBy); err != nil {
		return r, err
	}
	r.UpdatedAt = r.UpdatedAt.UTC()
	return r, specrows.DecodeVendor(&r, id, spec)
}

func (s *Store) GetVendor(ctx context.Context, id string) (registry.VendorRecord, error) {
	r, err := scanVendor(s.pool.QueryRow(ctx, s.q.getVendor, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.VendorRecord{}, fmt.Errorf("%w: vendor %q", registry.ErrNotFound, id)
	}
	if err != nil {
		return registry.VendorRecord{}, fmt.Errorf("pgstore: get vendor %q: %w", id, err)
	}
	return r, nil
}

func (s *Store) VendorHistory(ctx context.Context, id string) ([]registry.VendorRecord, error) {
	out, err := s.queryVendors(ctx, s.q.vendorHistory, id)
	if err != nil {
		return nil, fmt.Errorf("pgstore: vendor history %q: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: vendor %q", registry.ErrNotFound, id)
	}
	return out, nil
}

func (s *Store) ListVendors(ctx context.Context) ([]registry.VendorRecord, error) {
	out, err := s.queryVendors(ctx, s.q.listVendors)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list vendors: %w", err)
	}
	return out, nil
}

func (s *Store) queryVendors(ctx context.Context, query string, args ...any) ([]registry.VendorRecord, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return specrows.Vendors(rows, scanVendor)
}

func (s *Store) DeleteVendor(ctx context.Context, id string) error {
	return s.delete(ctx, KindVendor, s.q.deleteVendor, id)
}

func (s *Store) delete(ctx context.Context, kind, query, id string) error {
	errNotFound := fmt.Errorf("%w: %s %q", registry.ErrNotFound, kind, id)
	err := s.change(ctx, kind, id, func(tx pgx.Tx) error {
		if kind == KindVendor {
			if err := s.lockVendor(ctx, tx, id); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, query, id)
		if err == nil && tag.RowsAffected() == 0 {
			return errNotFound // and roll back: nothing to notify
		}
		return err
	})
	if err != nil && !errors.Is(err, errNotFound) {
		return fmt.Errorf("pgstore: delete %s %q: %w", kind, id, err)
	}
	return err
}

func (s *Store) PutTenant(ctx context.Context, t registry.Tenant) error {
	if err := t.Validate(); err != nil {
		return err
	}
	return s.put(ctx, KindTenant, s.q.putTenant, t.ID, t)
}

func (s *Store) put(ctx context.Context, kind, query, id string, spec any) error {
	text, err := registry.EncodeSpec(spec)
	if err == nil {
		err = s.change(ctx, kind, id, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, query, id, text)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("pgstore: put %s %q: %w", kind, id, err)
	}
	return nil
}

func (s *Store) GetTenant(ctx context.Context, id string) (registry.Tenant, error) {
	var (
		t    registry.Tenant
		spec []byte
	)
	err := s.pool.QueryRow(ctx, s.q.getTenant, id).Scan(&spec)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, fmt.Errorf("%w: tenant %q", registry.ErrNotFound, id)
	}
	if err == nil {
		err = json.Unmarshal(spec, &t)
	}
	if err != nil {
		return registry.Tenant{}, fmt.Errorf("pgstore: get tenant %q: %w", id, err)
	}
	return t, nil
}

func (s *Store) ListTenants(ctx context.Context) ([]registry.Tenant, error) {
	out, err := listSpecs[registry.Tenant](ctx, s.pool, s.q.listTenants)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list tenants: %w", err)
	}
	return out, nil
}

func (s *Store) DeleteTenant(ctx context.Context, id string) error {
	return s.delete(ctx, KindTenant, s.q.deleteTenant, id)
}

func (s *Store) PutCapability(ctx context.Context, c registry.Capability) error {
	if err := c.Compile(); err != nil {
		return err
	}
	// The spec fields only: compiled schemas are rebuilt by whoever serves it.
	return s.put(ctx, KindCapability, s.q.putCapability, c.Name, c)
}

func (s *Store) ListCapabilities(ctx context.Context) ([]registry.Capability, error) {
	out, err := listSpecs[registry.Capability](ctx, s.pool, s.q.listCapabilities)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list capabilities: %w", err)
	}
	return out, nil
}

func (s *Store) DeleteCapability(ctx context.Context, name string) error {
	return s.delete(ctx, KindCapability, s.q.deleteCapability, name)
}

// listSpecs reads (key, spec) rows into specs.
func listSpecs[T any](ctx context.Context, pool *pgxpool.Pool, query string) ([]T, error) {
	rows, err := pool.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return specrows.Specs[T](rows)
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// Pins are not notified on Channel: they change as vendors list their
// tools, which every instance does itself.

func (s *Store) PutToolPin(ctx context.Context, p registry.ToolPin) error {
	spec, err := registry.EncodeSpec(p)
	if err == nil {
		_, err = s.pool.Exec(ctx, strings.ReplaceAll(`INSERT INTO {s}.tool_pins (vendor, tool, state, hash, spec) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (vendor, tool, state) DO UPDATE SET hash = EXCLUDED.hash, spec = EXCLUDED.spec`, "{s}", s.ident()), p.Vendor, p.Tool, p.State, p.Hash, spec)
	}
	if err != nil {
		return fmt.Errorf("pgstore: put tool pin %q/%q: %w", p.Vendor, p.Tool, err)
	}
	return nil
}

func (s *Store) ToolPins(ctx context.Context, vendor string) ([]registry.ToolPin, error) {
	rows, err := s.pool.Query(ctx, strings.ReplaceAll(`SELECT vendor, tool, state, hash, spec FROM {s}.tool_pins
		WHERE $1 = '' OR vendor = $1 ORDER BY vendor, tool, state`, "{s}", s.ident()), vendor)
	if err != nil {
		return nil, fmt.Errorf("pgstore: tool pins: %w", err)
	}
	defer rows.Close()
	return specrows.Pins(rows)
}

func (s *Store) DeleteToolPin(ctx context.Context, vendor, tool, state string) error {
	if _, err := s.pool.Exec(ctx, strings.ReplaceAll(`DELETE FROM {s}.tool_pins WHERE vendor = $1 AND tool = $2 AND state = $3`, "{s}", s.ident()), vendor, tool, state); err != nil {
		return fmt.Errorf("pgstore: delete tool pin %q/%q: %w", vendor, tool, err)
	}
	return nil
}

func (s *Store) DeleteVendorPins(ctx context.Context, vendor string) error {
	if _, err := s.pool.Exec(ctx, strings.ReplaceAll(`DELETE FROM {s}.tool_pins WHERE vendor = $1`, "{s}", s.ident()), vendor); err != nil {
		return fmt.Errorf("pgstore: delete tool pins of %q: %w", vendor, err)
	}
	return nil
}

func (s *Store) ident() string { return pgx.Identifier{s.schema}.Sanitize() }
