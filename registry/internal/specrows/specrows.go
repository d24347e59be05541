// Package specrows is the SQL-agnostic part of the registry's two
// database stores (registry/sqlstore, registry/pgstore): reading rows of
// JSON specs into registry values. Each store runs its own SQL and hands
// the rows ([Rows]: *sql.Rows and pgx.Rows both are) here; closing them
// stays the caller's.
package specrows

import (
	"encoding/json"
	"fmt"

	"github.com/toolhub/toolhub/registry"
)

// Row is one row: *database/sql.Row, *database/sql.Rows, pgx.Row and
// pgx.Rows all satisfy it.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set: *database/sql.Rows and pgx.Rows both satisfy it.
type Rows interface {
	Row
	Next() bool
	Err() error
}

// Specs reads (key, spec) rows into specs; a spec that does not decode is
// an error naming its key.
func Specs[T any](rows Rows) ([]T, error) {
	out := []T{}
	for rows.Next() {
		var (
			key  string
			spec []byte
			v    T
		)
		if err := rows.Scan(&key, &spec); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(spec, &v); err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Vendors reads vendor versions, each row read by scan.
func Vendors(rows Rows, scan func(Row) (registry.VendorRecord, error)) ([]registry.VendorRecord, error) {
	out := []registry.VendorRecord{}
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// DecodeVendor decodes the stored spec of vendor id's version r.Version
// into r.Vendor.
func DecodeVendor(r *registry.VendorRecord, id string, spec []byte) error {
	if err := json.Unmarshal(spec, &r.Vendor); err != nil {
		return fmt.Errorf("vendor %q version %d: %w", id, r.Version, err)
	}
	return nil
}

// Pins reads (vendor, tool, state, hash, spec) rows into tool pins; a spec
// that does not decode is a Corrupt pin ([registry.DecodePin]).
func Pins(rows Rows) ([]registry.ToolPin, error) {
	out := []registry.ToolPin{}
	for rows.Next() {
		var (
			vendor, tool, state, hash string
			spec                      []byte
		)
		if err := rows.Scan(&vendor, &tool, &state, &hash, &spec); err != nil {
			return nil, err
		}
		out = append(out, registry.DecodePin(vendor, tool, state, hash, spec))
	}
	return out, rows.Err()
}
