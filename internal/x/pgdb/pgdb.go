// Package pgdb is toolhub's one way to connect to PostgreSQL: every
// shared store (registry, ledger, API keys, audit log, approvals) opens
// its pool through [Open], so all of them parse the DSN, check the schema
// name, bound the connect time and set search_path the same way.
//
//	pool, cfg, err := pgdb.Open(ctx, dsn, &pgdb.Options{Schema: "toolhub"})
//	where := pgdb.Where(cfg, "toolhub") // for messages: never the password
//
// Stores still qualify every table with the schema; search_path is set to
// it too, so an operator's psql session and a store's statements mean
// the same tables.
package pgdb

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultConnectTimeout bounds one connection attempt when the DSN sets no
// connect_timeout: a database that does not answer fails a start, a
// reconnect or a listener within it instead of hanging.
const DefaultConnectTimeout = 10 * time.Second

// Options tune [Open]. A nil *Options means the defaults.
type Options struct {
	// Schema holds the store's tables: 1 to 63 bytes, no NUL (PostgreSQL
	// would cut a longer name, silently sharing a schema between two
	// names). Required.
	Schema string
	// MaxConns caps the pool. Zero means the DSN's pool_max_conns, or
	// else pgxpool's default (4, or the number of CPUs if more).
	MaxConns int32
	// ConnectTimeout bounds one connection attempt. Zero means the DSN's
	// connect_timeout, or else [DefaultConnectTimeout].
	ConnectTimeout time.Duration
}

// Where describes a pool's database for messages, without the password:
// `host:port/database schema "name"`.
func Where(cfg *pgxpool.Config, schema string) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s:%d/%s schema %q", c.Host, c.Port, c.Database, schema)
}

// Config parses dsn (a URL or key=value string, as pgx takes it) and
// applies o: pool size, connect timeout, search_path. Errors read
// "open: …" or "open host:port/db schema "s": …" (a store puts its name
// first) and never hold the password.
func Config(dsn string, o *Options) (*pgxpool.Config, error) {
	if o == nil {
		o = &Options{}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err) // pgx leaves the password out
	}
	if o.Schema == "" || len(o.Schema) > 63 || strings.ContainsRune(o.Schema, 0) {
		return nil, fmt.Errorf("open %s: a schema name has 1 to 63 bytes and no NUL", Where(cfg, o.Schema))
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	switch {
	case o.ConnectTimeout > 0:
		cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	case cfg.ConnConfig.ConnectTimeout <= 0:
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{o.Schema}.Sanitize()
	return cfg, nil
}

// Open parses dsn ([Config]) and connects a pool. It does not wait for a
// connection: the store's first statement (its migration) does.
func Open(ctx context.Context, dsn string, o *Options) (*pgxpool.Pool, *pgxpool.Config, error) {
	cfg, err := Config(dsn, o)
	if err != nil {
		return nil, nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", Where(cfg, o.Schema), err)
	}
	return pool, cfg, nil
}
