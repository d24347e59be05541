package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned by a [Store] for an id it does not hold.
var ErrNotFound = errors.New("registry: not found")

// ErrVersionConflict is returned by PutVendor when the caller's expected
// version is not the stored one (another writer got there first).
var ErrVersionConflict = errors.New("registry: version conflict")

// VendorRecord is a stored vendor spec with its version history position.
type VendorRecord struct {
	Vendor    Vendor    `json:"vendor"`
	Version   int64     `json:"version"` // 1 for the first registration, +1 per change
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by,omitempty"`
}

// Store keeps what is registered at run time: vendors (versioned, with
// history so a change can be rolled back), tenants and capabilities. The
// static config is not in a Store; it is loaded at start-up.
//
// Implementations: [NewMemoryStore], sqlstore (SQLite) and pgstore
// (PostgreSQL). All pass the same contract suite (registrytest).
type Store interface {
	// PutVendor stores a new version of a vendor. expect is the version the
	// caller last read (0 for a new vendor, -1 for "any"); a mismatch gives
	// ErrVersionConflict. It returns the stored record.
	PutVendor(ctx context.Context, v Vendor, expect int64, by string) (VendorRecord, error)
	// GetVendor returns the newest version.
	GetVendor(ctx context.Context, id string) (VendorRecord, error)
	// VendorHistory returns every version of a vendor, oldest first.
	VendorHistory(ctx context.Context, id string) ([]VendorRecord, error)
	// ListVendors returns the newest version of every vendor, by id.
	ListVendors(ctx context.Context) ([]VendorRecord, error)
	// DeleteVendor removes a vendor and its history.
	DeleteVendor(ctx context.Context, id string) error

	PutTenant(ctx context.Context, t Tenant) error
	GetTenant(ctx context.Context, id string) (Tenant, error)
	ListTenants(ctx context.Context) ([]Tenant, error)
	DeleteTenant(ctx context.Context, id string) error

	PutCapability(ctx context.Context, c Capability) error
	ListCapabilities(ctx context.Context) ([]Capability, error)
	DeleteCapability(ctx context.Context, name string) error

	// Tool pins and held versions ([Pinner]).
	PinStore

	Close() error
}

// EncodeSpec marshals a stored spec (vendor, tenant, capability) as compact
// JSON text for a database column. HTML characters are kept as they are, so
// a raw schema is stored as it was registered, less insignificant spaces.
func EncodeSpec(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}
