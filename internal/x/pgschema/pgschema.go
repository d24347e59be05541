// Package pgschema creates and migrates the tables of toolhub's
// PostgreSQL stores that share the registry's schema: the registry itself
// (registry/pgstore, [MigrateSchema]) and the smaller stores — API keys
// (auth/pgkeys), the audit log (audit/pgaudit), pending vendor approvals
// (approval/pgapproval) — in the schema the registry and ledger use.
//
//	err := pgschema.Migrate(ctx, pool, "toolhub", "audit", [][]string{
//		{`CREATE TABLE {s}.audit_log (...)`}, // version 1
//	})
//
// Each component's version is a row of {s}.component_versions (the
// registry's, the one row of {s}.schema_version). Migrations run in one
// transaction under one advisory lock for the schema, so hubs starting at
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
	return migrate(ctx, pool, schema, component, componentVersions(component), migrations)
}

// MigrateSchema is [Migrate] for the tables of the schema's own store, the
// registry's (registry/pgstore), whose version is the one row of
// {s}.schema_version.
func MigrateSchema(ctx context.Context, pool *pgxpool.Pool, schema string, migrations [][]string) error {
	return migrate(ctx, pool, schema, "", schemaVersion, migrations)
}

// versionTable is where a store's tables keep the version they are at.
// Its statements and query have {s} for the quoted schema name.
type versionTable struct {
	name   string   // the table's name in the schema
	create []string // make the table (and, for a table of one row, the row at version 0)
	get    string   // the version, taking args
	set    string   // stores the version, taking args and then the version
	args   []any
	// noRow is the version when get finds no row; negative means that is
	// an error (the table's one row is gone).
	noRow int
}

// schemaVersion holds the registry's version: the first table a schema
// had, kept as it was.
var schemaVersion = versionTable{
	name: "schema_version",
	create: []string{`CREATE TABLE {s}.schema_version (version integer NOT NULL)`,
		`INSERT INTO {s}.schema_version (version) VALUES (0)`},
	get:   `SELECT version FROM {s}.schema_version`,
	set:   `UPDATE {s}.schema_version SET version = $1`,
	noRow: -1,
}

// componentVersions holds the version of each smaller store's tables.
func componentVersions(component string) versionTable {
	return versionTable{
		name: "component_versions",
		create: []string{`CREATE TABLE {s}.component_versions (
				component text COLLATE "C" PRIMARY KEY, version integer NOT NULL)`},
		get: `SELECT version FROM {s}.component_versions WHERE component = $1`,
		set: `INSERT INTO {s}.component_versions (component, version) VALUES ($1, $2)
			ON CONFLICT (component) DO UPDATE SET version = excluded.version`,
		args: []any{component},
	}
}

// migrate brings the tables of component ("" for the registry's) in schema
// to len(migrations), in one transaction under the advisory lock every
// store migrating schema takes; vt keeps their version.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema, component string, vt versionTable, migrations [][]string) error {
	ident := pgx.Identifier{schema}.Sanitize()
	inSchema := func(stmt string) string { return strings.ReplaceAll(stmt, "{s}", ident) }
	label, tables := "migrate", "tables"
	if component != "" {
		label, tables = "migrate "+component, component+" tables"
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// One lock for every store of the schema: it also creates the schema.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "toolhub registry migrate "+schema); err != nil {
			return fmt.Errorf("%s: lock: %w", label, err)
		}
		// Look before creating: an operator may have made the schema (and
		// the tables) and kept CREATE on the database from toolhub's role.
		var schemaExists, tableExists bool
		if err := tx.QueryRow(ctx,
			`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), to_regclass($2) IS NOT NULL`,
			schema, ident+"."+vt.name).Scan(&schemaExists, &tableExists); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		if !schemaExists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+ident); err != nil {
				return fmt.Errorf("%s: create schema: %w", label, err)
			}
		}
		if !tableExists {
			for _, stmt := range vt.create {
				if _, err := tx.Exec(ctx, inSchema(stmt)); err != nil {
					return fmt.Errorf("%s: %w", label, err)
				}
			}
		}
		var cur int
		err := tx.QueryRow(ctx, inSchema(vt.get), vt.args...).Scan(&cur)
		if errors.Is(err, pgx.ErrNoRows) && vt.noRow >= 0 {
			cur, err = vt.noRow, nil
		}
		if err != nil {
			return fmt.Errorf("%s: version: %w", label, err)
		}
		switch {
		case cur > len(migrations):
			return fmt.Errorf("%s are at version %d, newer than this toolhub knows (%d): upgrade toolhub", tables, cur, len(migrations))
		case cur == len(migrations):
			return nil
		}
		for v := cur + 1; v <= len(migrations); v++ {
			for _, stmt := range migrations[v-1] {
				if _, err := tx.Exec(ctx, inSchema(stmt)); err != nil {
					return fmt.Errorf("%s to version %d: %w", label, v, err)
				}
			}
		}
		if _, err := tx.Exec(ctx, inSchema(vt.set), append(vt.args, len(migrations))...); err != nil {
			return fmt.Errorf("%s: %w", label, err)
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
