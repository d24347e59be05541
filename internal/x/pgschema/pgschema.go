// Package pgschema creates and migrates the tables of toolhub's smaller
// PostgreSQL stores — API keys (auth/pgkeys), the audit log
// (audit/pgaudit), pending vendor approvals (approval/pgapproval) — in the
// schema the registry and ledger use.
//
//	err := pgschema.Migrate(ctx, pool, "toolhub", "audit", [][]string{
//		{`CREATE TABLE {s}.audit_log (...)`}, // version 1
//	})
//
// Each component's version is a row of {s}.component_versions. Migrations
// run in one transaction under the advisory lock the registry store
// (registry/pgstore) takes to migrate the same schema, so hubs starting at
// once create the schema and each table once.
package pgschema

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/toolhub/toolhub/internal/x/pgdb"
)

// Migrate brings component's tables in schema to len(migrations):
// migrations[0] makes version 1, and so on (append only; never edit one
// that has shipped). {s} in a statement is the quoted schema name. Tables
// newer than migrations know are refused.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema, component string, migrations [][]string) error {
	ident := pgx.Identifier{schema}.Sanitize()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// The registry store's lock: it also creates the schema.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "toolhub registry migrate "+schema); err != nil {
			return fmt.Errorf("migrate %s: lock: %w", component, err)
		}
		// Look before creating: an operator may have made the schema and
		// kept CREATE on the database from toolhub's role.
		var schemaExists, tableExists bool
		if err := tx.QueryRow(ctx,
			`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), to_regclass($2) IS NOT NULL`,
			schema, ident+".component_versions").Scan(&schemaExists, &tableExists); err != nil {
			return fmt.Errorf("migrate %s: %w", component, err)
		}
		if !schemaExists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+ident); err != nil {
				return fmt.Errorf("migrate %s: create schema: %w", component, err)
			}
		}
		if !tableExists {
			if _, err := tx.Exec(ctx, `CREATE TABLE `+ident+`.component_versions (
				component text COLLATE "C" PRIMARY KEY, version integer NOT NULL)`); err != nil {
				return fmt.Errorf("migrate %s: %w", component, err)
			}
		}
		var cur int
		err := tx.QueryRow(ctx, `SELECT version FROM `+ident+`.component_versions WHERE component = $1`, component).Scan(&cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("migrate %s: version: %w", component, err)
		}
		switch {
		case cur > len(migrations):
			return fmt.Errorf("%s tables are at version %d, newer than this toolhub knows (%d): upgrade toolhub", component, cur, len(migrations))
		case cur == len(migrations):
			return nil
		}
		for v := cur + 1; v <= len(migrations); v++ {
			for _, stmt := range migrations[v-1] {
				if _, err := tx.Exec(ctx, strings.ReplaceAll(stmt, "{s}", ident)); err != nil {
					return fmt.Errorf("migrate %s to version %d: %w", component, v, err)
				}
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO `+ident+`.component_versions (component, version) VALUES ($1, $2)
			ON CONFLICT (component) DO UPDATE SET version = excluded.version`, component, len(migrations))
		if err != nil {
			return fmt.Errorf("migrate %s: %w", component, err)
		}
		return nil
	})
}

// Where describes a pool's database for messages: [pgdb.Where].
func Where(cfg *pgxpool.Config, schema string) string { return pgdb.Where(cfg, schema) }

// Open connects a pool through [pgdb.Open] (maxConns > 0 caps it) and
// migrates component's tables in schema. Errors name where, never the
// password.
func Open(ctx context.Context, dsn, schema, component string, maxConns int32, migrations [][]string) (*pgxpool.Pool, *pgxpool.Config, error) {
	pool, cfg, err := pgdb.Open(ctx, dsn, &pgdb.Options{Schema: schema, MaxConns: maxConns})
	if err != nil {
		return nil, nil, err
	}
	if err := Migrate(ctx, pool, schema, component, migrations); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("open %s: %w", Where(cfg, schema), err)
	}
	return pool, cfg, nil
}

// DefaultSchema holds a store's tables when its options name no schema.
const DefaultSchema = "toolhub"

// Table is one store's table, open and migrated.
type Table struct {
	Pool   *pgxpool.Pool
	Config *pgxpool.Config
	Schema string
	Where  string // the database and schema, for messages ([Where])
	Name   string // the table's name, qualified with its schema and quoted
}

// OpenTable is [Open] for a store of one table: schema "" means
// [DefaultSchema], and the table is component's name.
func OpenTable(ctx context.Context, dsn, schema, table string, maxConns int32, migrations [][]string) (*Table, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	pool, cfg, err := Open(ctx, dsn, schema, table, maxConns, migrations)
	if err != nil {
		return nil, err
	}
	return &Table{Pool: pool, Config: cfg, Schema: schema, Where: Where(cfg, schema),
		Name: pgx.Identifier{schema}.Sanitize() + "." + table}, nil
}
