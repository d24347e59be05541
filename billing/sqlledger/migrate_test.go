package sqlledger_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/internal/ledgersql"
	"github.com/toolhub/toolhub/billing/ledgertest"
	"github.com/toolhub/toolhub/billing/sqlledger"
)

// oldSchema is the events table as toolhub made it before a row could
// hold a call and its one attempt (25 columns, no attempt_latency_ns).
const oldSchema = `
CREATE TABLE events (
	key TEXT NOT NULL UNIQUE, call_id TEXT NOT NULL, kind TEXT NOT NULL, attempt INTEGER NOT NULL,
	time_us INTEGER NOT NULL, ingested_us INTEGER NOT NULL, tenant TEXT NOT NULL, vendor TEXT NOT NULL,
	tool TEXT NOT NULL, capability TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL,
	latency_ns INTEGER NOT NULL, units TEXT NOT NULL, images INTEGER NOT NULL, tokens INTEGER NOT NULL,
	seconds INTEGER NOT NULL, tenant_unit_price INTEGER NOT NULL, tenant_cost INTEGER NOT NULL,
	vendor_unit_price INTEGER NOT NULL, vendor_cost INTEGER NOT NULL, currency TEXT NOT NULL,
	price_version TEXT NOT NULL, adjusts TEXT NOT NULL, month_us INTEGER NOT NULL
);
CREATE INDEX events_time ON events (time_us);
CREATE TABLE rollup_hours (
	hour_us INTEGER NOT NULL, month_us INTEGER NOT NULL, tenant TEXT NOT NULL, vendor TEXT NOT NULL,
	tool TEXT NOT NULL, currency TEXT NOT NULL, calls INTEGER NOT NULL, rejected INTEGER NOT NULL,
	failed INTEGER NOT NULL, cached INTEGER NOT NULL, attempts INTEGER NOT NULL, paid INTEGER NOT NULL,
	images INTEGER NOT NULL, tokens INTEGER NOT NULL, seconds INTEGER NOT NULL, tenant_cost INTEGER NOT NULL,
	vendor_cost INTEGER NOT NULL, PRIMARY KEY (hour_us, tenant, vendor, tool, currency)
) WITHOUT ROWID;`

// writeOldLedger makes a ledger file the way the old schema stored evs:
// one row per event, and their hourly rollups.
func writeOldLedger(t *testing.T, path string, evs []billing.Event) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(oldSchema); err != nil {
		t.Fatal(err)
	}
	cols := strings.TrimSuffix(ledgersql.Columns, ", attempt_latency_ns")
	for i := range evs {
		vals := ledgersql.Values(&evs[i])[:25]
		if _, err := db.Exec("INSERT INTO events ("+cols+") VALUES (?"+strings.Repeat(",?", 24)+")", vals...); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range ledgersql.Aggregate(evs, nil) {
		if _, err := db.Exec("INSERT INTO rollup_hours ("+ledgersql.RollupTableColumns+") VALUES (?"+strings.Repeat(",?", 16)+")", h.Values()...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigratesOldLedger: a file made by the old schema opens (gaining the
// column merged rows need), takes merged rows, and reads — events and
// rollups — as a ledger that stored every event on a row of its own.
func TestMigratesOldLedger(t *testing.T) {
	evs := ledgertest.MeterFixture()
	half := len(evs) / 2
	for evs[half].Kind != billing.KindCall {
		half++
	}
	path := filepath.Join(t.TempDir(), "old.db")
	writeOldLedger(t, path, evs[:half])

	ref := open(t)
	if err := ref.Append(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	for range 2 { // and opening it again, migrated, changes nothing
		l, err := sqlledger.Open(t.Context(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		newer := ledgertest.Merge(evs[half:])
		if len(newer) == len(evs[half:]) {
			t.Fatal("nothing merged")
		}
		if err := l.Append(t.Context(), newer); err != nil {
			t.Fatal(err)
		}
		ledgertest.Same(t, ref, l)
		l.Close()
	}
}
