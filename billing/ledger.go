package billing

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrClosed is returned by a ledger or meter used after Close.
var ErrClosed = errors.New("billing: closed")

// Ledger stores usage events, append-only. The sqlledger (SQLite) and
// pgledger (PostgreSQL) packages implement it; ledgertest holds the
// contract both pass.
type Ledger interface {
	// Append stores events in one transaction. It is idempotent on
	// Event.Key: events whose key is already stored are ignored and counted
	// in Stats().Duplicates. Either every new event is stored or none is.
	Append(ctx context.Context, events []Event) error
	// Query calls fn for each event with From ≤ Time < To matching the
	// filter, ordered by time then key. An error from fn stops the scan.
	Query(ctx context.Context, f Filter, fn func(Event) error) error
	// Rollup sums events with From ≤ Time < To, grouped by q.GroupBy.
	Rollup(ctx context.Context, q RollupQuery) ([]Row, error)
	// Stats counts what this ledger value appended and ignored.
	Stats() LedgerStats
	Close() error
}

// Syncer is a [Ledger] that commits durably against a process crash but
// not against a power loss until it is asked (SQLite in WAL mode with
// synchronous=NORMAL). The meter calls Sync before it deletes a segment of
// its write-ahead log or spill whose events the ledger holds, so a machine
// crash loses no event either; a segment is kept when Sync fails.
type Syncer interface {
	Sync(ctx context.Context) error
}

// LedgerStats counts appends since the ledger was opened.
type LedgerStats struct {
	Appended   int64 // new events stored
	Duplicates int64 // events ignored because their key was stored
}

// Filter selects events. Zero fields match everything (zero To: no end).
type Filter struct {
	From, To time.Time
	Tenant   string
	Vendor   string
	Kind     Kind
}

// Grouping dimensions for [RollupQuery].GroupBy.
const (
	ByTenant = "tenant"
	ByVendor = "vendor"
	ByTool   = "tool"
	ByHour   = "hour"
	ByDay    = "day"
	ByMonth  = "month"
)

// RollupQuery asks for sums over a time range. Rows are always split by
// currency (amounts in different currencies never add up).
type RollupQuery struct {
	Filter
	GroupBy []string // tenant, vendor, tool, hour, day, month (at most one period)
}

// Validate checks the grouping.
func (q RollupQuery) Validate() error {
	periods := 0
	seen := map[string]bool{}
	for _, g := range q.GroupBy {
		switch g {
		case ByTenant, ByVendor, ByTool:
		case ByHour, ByDay, ByMonth:
			periods++
		default:
			return fmt.Errorf("billing: group by %q: want tenant, vendor, tool, hour, day or month", g)
		}
		if seen[g] {
			return fmt.Errorf("billing: group by %q twice", g)
		}
		seen[g] = true
	}
	if periods > 1 {
		return errors.New("billing: group by at most one of hour, day, month")
	}
	if !q.To.IsZero() && q.To.Before(q.From) {
		return errors.New("billing: the report ends before it starts (to < from)")
	}
	return nil
}

// Period returns the period grouping of q ("" when none).
func (q RollupQuery) Period() string {
	for _, g := range q.GroupBy {
		if g == ByHour || g == ByDay || g == ByMonth {
			return g
		}
	}
	return ""
}

// Has reports whether q groups by g.
func (q RollupQuery) Has(g string) bool {
	for _, x := range q.GroupBy {
		if x == g {
			return true
		}
	}
	return false
}

// Row is one group of a rollup. Dimensions not grouped by are empty.
//
// Calls, Rejected, Cached, Failed and the units count call events (one per
// call); Attempts and Paid count vendor attempts. TenantCost sums call
// events and VendorCost attempt events, so neither double counts.
type Row struct {
	Tenant   string    `json:"tenant,omitempty"`
	Vendor   string    `json:"vendor,omitempty"`
	Tool     string    `json:"tool,omitempty"`
	Period   time.Time `json:"period,omitzero"` // start of the hour/day/month, UTC
	Currency string    `json:"currency"`

	Calls      int64  `json:"calls"`    // call events
	Rejected   int64  `json:"rejected"` // calls refused by toolhub (budget, limits)
	Failed     int64  `json:"failed"`   // calls that ended in error or timeout
	Cached     int64  `json:"cached"`   // calls answered from cache (fresh or stale)
	Attempts   int64  `json:"attempts"` // vendor attempts
	Paid       int64  `json:"paid"`     // successful vendor attempts (the ones paid)
	Images     int64  `json:"images"`
	Tokens     int64  `json:"tokens"`
	Seconds    int64  `json:"seconds"`
	TenantCost Micros `json:"tenant_cost"`
	VendorCost Micros `json:"vendor_cost"`
}

// Margin is what toolhub keeps: tenant charges minus vendor payouts.
func (r Row) Margin() Micros { return r.TenantCost - r.VendorCost }
