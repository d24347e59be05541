package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// migrations bring the schema's tables from one version to the next:
// migrations[0] makes version 1, and so on. Append only; never edit one
// that has shipped. {s} is the quoted schema name.
//
// Ids are COLLATE "C": they sort as bytes, the order every store lists in,
// whatever the database's locale.
var migrations = [][]string{
	{ // 1: vendors with their history, tenants, capabilities.
		`CREATE TABLE {s}.vendor_versions (
			id         text COLLATE "C" NOT NULL,
			version    bigint      NOT NULL CHECK (version > 0),
			spec       jsonb       NOT NULL,
			updated_at timestamptz NOT NULL,
			updated_by text        NOT NULL DEFAULT '',
			PRIMARY KEY (id, version)
		)`,
		`CREATE TABLE {s}.tenants (
			id   text COLLATE "C" PRIMARY KEY,
			spec jsonb NOT NULL
		)`,
		// json, not jsonb: jsonb reorders object keys, and the key order of
		// a capability's schemas is the argument order a model is shown.
		`CREATE TABLE {s}.capabilities (
			name text COLLATE "C" PRIMARY KEY,
			spec json NOT NULL
		)`,
		`COMMENT ON COLUMN {s}.capabilities.spec IS 'json, not jsonb: keeps the key order of the schemas'`,
	},
	{ // 2: tool pins and held tool versions (registry.ToolPin). spec is
		// text: a pinned schema keeps its key order, and a damaged row is
		// read back (and fails closed) rather than refused.
		`CREATE TABLE {s}.tool_pins (
			vendor text COLLATE "C" NOT NULL,
			tool   text COLLATE "C" NOT NULL,
			state  text COLLATE "C" NOT NULL,
			hash   text NOT NULL,
			spec   text NOT NULL,
			PRIMARY KEY (vendor, tool, state)
		)`,
	},
}

// migrate creates the schema and its tables, or upgrades them, in one
// transaction under an advisory lock: Stores opening one schema at once
// migrate it once.
func (s *Store) migrate(ctx context.Context) error {
	ident := pgx.Identifier{s.schema}.Sanitize()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "toolhub registry migrate "+s.schema); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		// Look before creating: an operator may have made the schema (and
		// the tables) and kept CREATE on the database from toolhub's role.
		var schemaExists, tableExists bool
		if err := tx.QueryRow(ctx,
			`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), to_regclass($2) IS NOT NULL`,
			s.schema, ident+".schema_version").Scan(&schemaExists, &tableExists); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if !schemaExists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+ident); err != nil {
				return fmt.Errorf("migrate: create schema: %w", err)
			}
		}
		if !tableExists {
			if _, err := tx.Exec(ctx, `CREATE TABLE `+ident+`.schema_version (version integer NOT NULL)`); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+ident+`.schema_version (version) VALUES (0)`); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
		}
		var cur int
		if err := tx.QueryRow(ctx, `SELECT version FROM `+ident+`.schema_version`).Scan(&cur); err != nil {
			return fmt.Errorf("migrate: schema version: %w", err)
		}
		if cur > len(migrations) {
			return fmt.Errorf("tables are at version %d, newer than this toolhub knows (%d): upgrade toolhub", cur, len(migrations))
		}
		if cur == len(migrations) {
			return nil
		}
		for v := cur + 1; v <= len(migrations); v++ {
			for _, stmt := range migrations[v-1] {
				if _, err := tx.Exec(ctx, strings.ReplaceAll(stmt, "{s}", ident)); err != nil {
					return fmt.Errorf("migrate to version %d: %w", v, err)
				}
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE `+ident+`.schema_version SET version = $1`, len(migrations)); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return nil
	})
}
