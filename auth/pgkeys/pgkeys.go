package pgkeys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/internal/x/pglisten"
	"github.com/toolhub/toolhub/internal/x/pgschema"
)

// Channel is the notification channel of key changes; the payload is the
// key id. It is per database: Stores on other schemas hear them too, and
// forget a key they may not even hold — harmless.
const Channel = "toolhub_keys"

// DefaultSchema holds the table when [Options].Schema is empty.
const DefaultSchema = pgschema.DefaultSchema

// Defaults of [Options].
const (
	DefaultCacheTTL     = 10 * time.Second
	DefaultStaleIfError = 5 * time.Minute
	DefaultMaxCached    = 100_000
)

// Options tune a [Store]. A nil *Options means every default.
type Options struct {
	// Schema holds the api_keys table; created if missing. Empty means
	// [DefaultSchema]. Hubs sharing keys use one schema.
	Schema string
	// MaxConns caps the connection pool. Zero means the DSN's
	// pool_max_conns or pgxpool's default. The listener uses one more
	// connection of its own.
	MaxConns int32
	// CacheTTL is how long a key read from the database is used again
	// while the Store listens for changes. Zero means [DefaultCacheTTL];
	// negative turns the cache (and the listener) off: every GetKey reads
	// the database.
	CacheTTL time.Duration
	// StaleIfError is how long a key read from the database keeps
	// verifying while the database cannot be reached (a key cannot be
	// revoked then either). Zero means [DefaultStaleIfError]; negative,
	// or a cache turned off, means not at all: no database, no
	// authentication.
	StaleIfError time.Duration
	// MaxCached bounds the cached keys; zero means [DefaultMaxCached].
	MaxCached int
	// Now is the cache's clock. Nil means time.Now.
	Now func() time.Time
	// Logger gets what the listener cannot return (a lost connection).
	// Nil means slog.Default().
	Logger *slog.Logger
}

// Store is an [auth.Store] in a PostgreSQL schema.
type Store struct {
	pool   *pgxpool.Pool
	conn   *pgx.ConnConfig
	where  string
	schema string
	put    string
	get    string
	list   string
	ttl    time.Duration
	stale  time.Duration
	max    int
	now    func() time.Time
	log    *slog.Logger

	stop context.CancelFunc
	done chan struct{}

	mu        sync.Mutex
	listening bool   // the cache may be used
	epoch     uint64 // +1 on every invalidation: a read that raced one is not cached
	cache     map[string]cached
	warned    time.Time // last outage warning
}

type cached struct {
	key auth.Key
	at  time.Time
}

var _ auth.Store = (*Store)(nil)

var migrations = [][]string{
	{ // 1
		`CREATE TABLE {s}.api_keys (
			id          text COLLATE "C" PRIMARY KEY,
			name        text NOT NULL DEFAULT '',
			role        text NOT NULL,
			tenant      text NOT NULL DEFAULT '',
			vendor      text NOT NULL DEFAULT '',
			secret_hash text NOT NULL,
			created_at  timestamptz NOT NULL,
			expires_at  timestamptz,
			revoked_at  timestamptz
		)`,
		`COMMENT ON COLUMN {s}.api_keys.secret_hash IS 'hex SHA-256 of the secret; the secret is never stored'`,
	},
}

// Open connects to the database at dsn, creates or migrates the api_keys
// table in the configured schema and, unless the cache is off, starts
// listening for changes.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	tb, err := pgschema.OpenTable(ctx, dsn, opts.Schema, "api_keys", opts.MaxConns, migrations)
	if err != nil {
		return nil, fmt.Errorf("pgkeys: %w", err)
	}
	pool, cfg, schema, t := tb.Pool, tb.Config, tb.Schema, tb.Name
	const cols = `id, name, role, tenant, vendor, secret_hash, created_at, expires_at, revoked_at`
	s := &Store{
		pool:   pool,
		conn:   cfg.ConnConfig.Copy(),
		where:  pgschema.Where(cfg, schema),
		schema: schema,
		// One statement: the row and its notification commit together.
		put: `WITH up AS (INSERT INTO ` + t + ` (` + cols + `) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)
			ON CONFLICT (id) DO UPDATE SET name = excluded.name, expires_at = excluded.expires_at, revoked_at = excluded.revoked_at
			RETURNING id) SELECT pg_notify('` + Channel + `', id) FROM up`,
		get:   `SELECT ` + cols + ` FROM ` + t + ` WHERE id = $1`,
		list:  `SELECT ` + cols + ` FROM ` + t + ` ORDER BY id`,
		ttl:   opts.CacheTTL,
		stale: opts.StaleIfError,
		max:   opts.MaxCached,
		now:   opts.Now,
		log:   opts.Logger,
		done:  make(chan struct{}),
		cache: map[string]cached{},
	}
	if s.ttl == 0 {
		s.ttl = DefaultCacheTTL
	}
	switch {
	case s.ttl < 0 || s.stale < 0:
		s.stale = 0
	case s.stale == 0:
		s.stale = DefaultStaleIfError
	}
	if s.max <= 0 {
		s.max = DefaultMaxCached
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	lctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	if s.ttl > 0 {
		go s.listen(lctx)
	} else {
		close(s.done)
	}
	return s, nil
}

// Close stops the listener and closes the store's connections. It may be
// called more than once.
func (s *Store) Close() error {
	s.stop()
	<-s.done
	s.pool.Close()
	return nil
}

func (s *Store) PutKey(ctx context.Context, k auth.Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, s.put, k.ID, k.Name, k.Role, k.Tenant, k.Vendor, k.SecretHash, k.CreatedAt, k.ExpiresAt, k.RevokedAt)
	if err != nil {
		return fmt.Errorf("pgkeys: store key %s in %s: %w", k.ID, s.where, err)
	}
	s.forget(k.ID) // this Store sees its own write at once, notification or not
	return nil
}

func (s *Store) GetKey(ctx context.Context, id string) (auth.Key, error) {
	s.mu.Lock()
	c, cachedOK := s.cache[id]
	epoch, listening := s.epoch, s.listening
	s.mu.Unlock()
	if cachedOK && listening && s.now().Sub(c.at) < s.ttl {
		return c.key, nil
	}
	at := s.now()
	k, err := scan(s.pool.QueryRow(ctx, s.get, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return auth.Key{}, fmt.Errorf("%w: %q", auth.ErrNotFound, id)
	}
	if err != nil {
		if cachedOK && ctx.Err() == nil && s.now().Sub(c.at) < s.stale {
			// The database cannot be reached: nobody can revoke a key now
			// either. Use what was read before the outage.
			s.warnStale(err)
			return c.key, nil
		}
		return auth.Key{}, fmt.Errorf("pgkeys: read key %s from %s: %w", id, s.where, err)
	}
	if s.ttl > 0 {
		s.mu.Lock()
		// Only if nothing was invalidated since the read began: a change
		// that committed after the read's snapshot has been (or will be)
		// heard, and must not be overwritten by what was read before it.
		// Read while not listening, it is kept only for an outage (and
		// forgotten when listening starts).
		if s.epoch == epoch {
			if _, ok := s.cache[id]; !ok && len(s.cache) >= s.max {
				for id := range s.cache { // drop one at random
					delete(s.cache, id)
					break
				}
			}
			s.cache[id] = cached{key: k, at: at}
		}
		s.mu.Unlock()
	}
	return k, nil
}

// warnStale logs, at most once a minute, that keys are verified from the
// cache because the database is away.
func (s *Store) warnStale(err error) {
	s.mu.Lock()
	now := s.now()
	warn := now.Sub(s.warned) >= time.Minute
	if warn {
		s.warned = now
	}
	s.mu.Unlock()
	if warn {
		s.log.Warn("pgkeys: the database cannot be reached; verifying keys read before the outage", "where", s.where, "err", err, "for_up_to", s.stale)
	}
}

func (s *Store) ListKeys(ctx context.Context) ([]auth.Key, error) {
	rows, err := s.pool.Query(ctx, s.list)
	if err != nil {
		return nil, fmt.Errorf("pgkeys: list keys in %s: %w", s.where, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.Key, error) { return scan(r) })
	if err != nil {
		return nil, fmt.Errorf("pgkeys: list keys in %s: %w", s.where, err)
	}
	return out, nil
}

func scan(r pgx.Row) (auth.Key, error) {
	var k auth.Key
	if err := r.Scan(&k.ID, &k.Name, &k.Role, &k.Tenant, &k.Vendor, &k.SecretHash, &k.CreatedAt, &k.ExpiresAt, &k.RevokedAt); err != nil {
		return auth.Key{}, err
	}
	k.CreatedAt = k.CreatedAt.UTC()
	for _, t := range []*time.Time{k.ExpiresAt, k.RevokedAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return k, nil
}

// forget drops a key from the cache.
func (s *Store) forget(id string) {
	s.mu.Lock()
	delete(s.cache, id)
	s.epoch++
	s.mu.Unlock()
}

// setListening turns the cache on or off. Turned on, it starts empty:
// changes made while it was off were not heard. Turned off, its keys are
// kept only for an outage (see [Options].StaleIfError).
func (s *Store) setListening(on bool) {
	s.mu.Lock()
	s.listening = on
	s.epoch++
	if on {
		clear(s.cache)
	}
	s.mu.Unlock()
}

// listen keeps a connection listening on [Channel] until ctx ends,
// reconnecting with backoff; the cache is used only while it listens.
func (s *Store) listen(ctx context.Context) {
	defer close(s.done)
	_ = pglisten.Run(ctx, s.conn, Channel, pglisten.Handlers{
		Connected: func() { s.setListening(true) },
		Notify:    s.forget,
		Lost: func(err error, wait time.Duration) {
			s.setListening(false)
			s.log.Warn("pgkeys: listen: connection lost; reading every key from the database until it is back", "where", s.where, "err", err, "retry_in", wait)
		},
	})
	s.setListening(false)
}

// Schema is the schema that holds the api_keys table.
func (s *Store) Schema() string { return s.schema }

// Cached reports whether the key id is in the store's cache.
func (s *Store) Cached(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.cache[id]
	return ok
}

// Listening reports whether the store is listening for changes (and so
// may answer GetKey from its cache). Tests wait for it.
func (s *Store) Listening() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listening
}
