package pgstore

import (
	"context"

	"github.com/toolhub/toolhub/internal/x/pgschema"
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
// transaction under the advisory lock of every store in the schema
// ([pgschema.MigrateSchema]): Stores opening one schema at once migrate it
// once.
func (s *Store) migrate(ctx context.Context) error {
	return pgschema.MigrateSchema(ctx, s.pool, s.schema, migrations)
}
