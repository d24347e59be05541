package pgledger_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/internal/ledgersql"
	"github.com/toolhub/toolhub/billing/ledgertest"
	"github.com/toolhub/toolhub/billing/pgledger"
)

// writeOldLedger makes the ledger tables in schema the way the old schema
// stored evs (25 columns, no attempt_latency_ns): one row per event, and
// their hourly rollups.
func writeOldLedger(t *testing.T, schema string, evs []billing.Event) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, testDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	s := pgx.Identifier{schema}.Sanitize()
	_, err = conn.Exec(ctx, `CREATE SCHEMA `+s+`;
CREATE TABLE `+s+`.usage_events (
	key text PRIMARY KEY, call_id text NOT NULL, kind text NOT NULL, attempt bigint NOT NULL,
	time_us bigint NOT NULL, ingested_us bigint NOT NULL, tenant text NOT NULL, vendor text NOT NULL,
	tool text NOT NULL, capability text NOT NULL, outcome text NOT NULL, reason text NOT NULL,
	latency_ns bigint NOT NULL, units text NOT NULL, images bigint NOT NULL, tokens bigint NOT NULL,
	seconds bigint NOT NULL, tenant_unit_price bigint NOT NULL, tenant_cost bigint NOT NULL,
	vendor_unit_price bigint NOT NULL, vendor_cost bigint NOT NULL, currency text NOT NULL,
	price_version text NOT NULL, adjusts text NOT NULL, month_us bigint NOT NULL);
CREATE INDEX usage_events_time ON `+s+`.usage_events (time_us);
CREATE TABLE `+s+`.usage_rollup_hours (
	hour_us bigint NOT NULL, month_us bigint NOT NULL, tenant text NOT NULL, vendor text NOT NULL,
	tool text NOT NULL, currency text NOT NULL, calls bigint NOT NULL, rejected bigint NOT NULL,
	failed bigint NOT NULL, cached bigint NOT NULL, attempts bigint NOT NULL, paid bigint NOT NULL,
	images bigint NOT NULL, tokens bigint NOT NULL, seconds bigint NOT NULL, tenant_cost bigint NOT NULL,
	vendor_cost bigint NOT NULL, PRIMARY KEY (hour_us, tenant, vendor, tool, currency));`)
	if err != nil {
		t.Fatal(err)
	}
	cols := strings.Split(strings.TrimSuffix(ledgersql.Columns, ", attempt_latency_ns"), ", ")
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{schema, "usage_events"}, cols, pgx.CopyFromSlice(len(evs), func(i int) ([]any, error) {
		return ledgersql.Values(&evs[i])[:25], nil
	})); err != nil {
		t.Fatal(err)
	}
	hours := ledgersql.Aggregate(evs, nil)
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{schema, "usage_rollup_hours"}, strings.Split(ledgersql.RollupTableColumns, ", "),
		pgx.CopyFromSlice(len(hours), func(i int) ([]any, error) { return hours[i].Values(), nil })); err != nil {
		t.Fatal(err)
	}
}

// TestMigratesOldLedger: tables made by the old schema read as before when
// opened read-only (not migrated), and once opened for writing gain the
// column merged rows need, take merged rows and read — events and
// rollups — as a ledger that stored every event on a row of its own.
func TestMigratesOldLedger(t *testing.T) {
	evs := ledgertest.MeterFixture()
	half := len(evs) / 2
	for evs[half].Kind != billing.KindCall {
		half++
	}
	schema := newSchema(t)
	writeOldLedger(t, schema, evs[:half])

	before := open(t, newSchema(t))
	if err := before.Append(t.Context(), evs[:half]); err != nil {
		t.Fatal(err)
	}
	ro, err := pgledger.Open(t.Context(), testDSN(), &pgledger.Options{Schema: schema, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.Same(t, before, ro)
	ro.Close()

	ref := open(t, newSchema(t))
	if err := ref.Append(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	newer := ledgertest.Merge(evs[half:])
	if len(newer) == len(evs[half:]) {
		t.Fatal("nothing merged")
	}
	for range 2 { // and opening it again, migrated, changes nothing
		l := open(t, schema)
		if err := l.Append(t.Context(), newer); err != nil {
			t.Fatal(err)
		}
		ledgertest.Same(t, ref, l)
		l.Close()
	}
}
