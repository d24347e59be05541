package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migrations bring the file's tables from one version to the next:
// migrations[0] makes version 1, and so on. Append only; never edit one
// that has shipped.
//
// Specs are JSON text (as the registry types marshal them); the columns
// beside them are what the store looks up and orders by. updated_at is
// Unix time in microseconds, UTC. Ids compare as bytes (BINARY), the order
// the other stores list in.
var migrations = [][]string{
	{ // 1: vendors with their history, tenants, capabilities.
		`CREATE TABLE vendor_versions (
			id         TEXT    NOT NULL,
			version    INTEGER NOT NULL CHECK (version > 0),
			spec       TEXT    NOT NULL CHECK (json_valid(spec)),
			updated_at INTEGER NOT NULL,
			updated_by TEXT    NOT NULL DEFAULT '',
			PRIMARY KEY (id, version)
		) WITHOUT ROWID`,
		`CREATE TABLE tenants (
			id   TEXT NOT NULL PRIMARY KEY,
			spec TEXT NOT NULL CHECK (json_valid(spec))
		) WITHOUT ROWID`,
		`CREATE TABLE capabilities (
			name TEXT NOT NULL PRIMARY KEY,
			spec TEXT NOT NULL CHECK (json_valid(spec))
		) WITHOUT ROWID`,
	},
	{ // 2: tool pins and held tool versions (registry.ToolPin). spec is
		// not checked as JSON: a damaged row must be read back (and fail
		// closed), not make the listing fail.
		`CREATE TABLE tool_pins (
			vendor TEXT NOT NULL,
			tool   TEXT NOT NULL,
			state  TEXT NOT NULL,
			hash   TEXT NOT NULL,
			spec   TEXT NOT NULL,
			PRIMARY KEY (vendor, tool, state)
		) WITHOUT ROWID`,
	},
}

// migrate creates or upgrades the tables in one write transaction, so two
// processes opening a new file at once do not both migrate it.
func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var cur int
	err = tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`)
	}
	if err != nil {
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
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate to version %d: %w", v, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, len(migrations)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
