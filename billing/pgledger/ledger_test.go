package pgledger_test

import (
	"bytes"
	"context"
	"path/filepath"
	"time"

	"crypto/rand"
	"encoding/hex"
	"github.com/google/go-cmp/cmp"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
	"github.com/toolhub/toolhub/billing/pgledger"
)

// testDSN is $TOOLHUB_TEST_POSTGRES or the local default.
func testDSN() string {
	if dsn := os.Getenv("TOOLHUB_TEST_POSTGRES"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

func requirePostgres(t testing.TB) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), testDSN())
	if err == nil {
		conn.Close(context.Background())
		return
	}
	if os.Getenv("TOOLHUB_SKIP_POSTGRES") == "1" {
		t.Skipf("TOOLHUB_SKIP_POSTGRES=1: %v", err)
	}
	t.Fatalf("%v\n(set TOOLHUB_TEST_POSTGRES, or TOOLHUB_SKIP_POSTGRES=1 to skip)", err)
}

// newSchema names a schema for this test alone, dropped when it ends.
func newSchema(t testing.TB) string {
	t.Helper()
	requirePostgres(t)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "billing_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, testDSN())
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

func open(t testing.TB, schema string) *pgledger.Ledger {
	t.Helper()
	l, err := pgledger.Open(t.Context(), testDSN(), &pgledger.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestContract(t *testing.T) {
	requirePostgres(t)
	ledgertest.Run(t, func(t *testing.T) billing.Ledger { return open(t, newSchema(t)) })
}

func TestTwoHubsShareOneLedger(t *testing.T) {
	schema := newSchema(t)
	a, b := open(t, schema), open(t, schema)
	evs := ledgertest.Fixture()
	errs := make(chan error, 2)
	go func() { errs <- a.Append(t.Context(), evs) }()
	go func() { errs <- b.Append(t.Context(), evs) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	sa, sb := a.Stats(), b.Stats()
	if sa.Appended+sb.Appended != int64(len(evs)) || sa.Duplicates+sb.Duplicates != int64(len(evs)) {
		t.Errorf("stats a=%+v b=%+v; want %d stored once, %d duplicates in all", sa, sb, len(evs), len(evs))
	}
}

// TestReportsMatchSQLite checks that PostgreSQL gives byte-identical
// reports to the SQLite golden files in billing/testdata.
func TestReportsMatchSQLite(t *testing.T) {
	l := open(t, newSchema(t))
	if err := l.Append(t.Context(), ledgertest.Fixture()); err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, q := range map[string]billing.ReportQuery{
		"usage_tenant_vendor_tool_day.csv": {From: from, To: to, GroupBy: []string{"tenant", "vendor", "tool", "day"}, Format: "csv"},
		"usage_month_vendor.json":          {From: from, To: to, GroupBy: []string{"month", "vendor"}, Format: "json"},
		"usage_hour_acme.csv":              {From: from, To: to, GroupBy: []string{"hour"}, Format: "csv", Tenant: "acme"},
	} {
		var buf bytes.Buffer
		if err := billing.Report(t.Context(), l, &buf, q); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), buf.String()); diff != "" {
			t.Errorf("%s (-sqlite golden +postgres):\n%s", name, diff)
		}
	}
}

func TestReadOnlyOpen(t *testing.T) {
	schema := newSchema(t)
	if _, err := pgledger.Open(t.Context(), testDSN(), &pgledger.Options{Schema: schema, ReadOnly: true}); err == nil {
		t.Fatal("read-only open of a missing ledger: no error")
	}
	w := open(t, schema)
	w.Append(t.Context(), ledgertest.Fixture()[:3])
	r, err := pgledger.Open(t.Context(), testDSN(), &pgledger.Options{Schema: schema, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	r.Query(t.Context(), billing.Filter{}, func(billing.Event) error { n++; return nil })
	if n != 3 {
		t.Errorf("read %d events, want 3", n)
	}
}
