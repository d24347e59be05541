package billing_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func fixtureLedger(t *testing.T) billing.Ledger {
	t.Helper()
	l := openLedger(t, t.TempDir())
	if err := l.Append(context.Background(), ledgertest.Fixture()); err != nil {
		t.Fatal(err)
	}
	return l
}

var (
	from = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to   = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
)

// GoldenReports are the report queries with golden files; the pgledger
// tests check that PostgreSQL gives byte-identical reports.
var goldenReports = map[string]billing.ReportQuery{
	"usage_tenant_vendor_tool_day.csv": {From: from, To: to, GroupBy: []string{"tenant", "vendor", "tool", "day"}, Format: "csv"},
	"usage_month_vendor.json":          {From: from, To: to, GroupBy: []string{"month", "vendor"}, Format: "json"},
	"usage_tenant.table":               {From: from, To: to, GroupBy: []string{"tenant"}, Format: "table"},
	"usage_hour_acme.csv":              {From: from, To: to, GroupBy: []string{"hour"}, Format: "csv", Tenant: "acme"},
	"usage_total.table":                {From: from, To: to, Format: "table"},
}

func TestGoldenReports(t *testing.T) {
	l := fixtureLedger(t)
	for name, q := range goldenReports {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := billing.Report(context.Background(), l, &buf, q); err != nil {
				t.Fatal(err)
			}
			golden(t, name, buf.Bytes())
		})
	}
}

func TestGoldenStatements(t *testing.T) {
	ctx := context.Background()
	l := fixtureLedger(t)
	inv, err := billing.Invoice(ctx, l, "acme", from, to)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	inv.Write(&buf, "json")
	golden(t, "invoice_acme.json", buf.Bytes())
	buf.Reset()
	inv.Write(&buf, "table")
	golden(t, "invoice_acme.table", buf.Bytes())

	pay, err := billing.Payout(ctx, l, "doubao", from, to)
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	pay.Write(&buf, "csv")
	golden(t, "payout_doubao.csv", buf.Bytes())

	// The invoices of all tenants add up to the usage report's tenant
	// cost; the payouts of all vendors to its vendor cost.
	rows, _ := l.Rollup(ctx, billing.RollupQuery{Filter: billing.Filter{From: from, To: to}})
	var invoiced, paid billing.Micros
	for _, tenant := range []string{"acme", "globex", "initech"} {
		st, _ := billing.Invoice(ctx, l, tenant, from, to)
		for _, tot := range st.Totals {
			if tot.Currency == "USD" {
				invoiced += tot.Amount
			}
		}
	}
	for _, vendor := range []string{"doubao", "sd", "weather-a", "maps-eu"} {
		st, _ := billing.Payout(ctx, l, vendor, from, to)
		for _, tot := range st.Totals {
			if tot.Currency == "USD" {
				paid += tot.Amount
			}
		}
	}
	for _, r := range rows {
		if r.Currency == "USD" && (r.TenantCost != invoiced || r.VendorCost != paid) {
			t.Errorf("invoices %v / payouts %v do not add up to the rollup %v / %v", invoiced, paid, r.TenantCost, r.VendorCost)
		}
	}
}

func TestReconcile(t *testing.T) {
	l := fixtureLedger(t)
	// The vendor's own counts: one day matches, one day they count one
	// more call, one amount differs, one day we do not have, and a day we
	// have is missing from theirs.
	var ours bytes.Buffer
	billing.Report(context.Background(), l, &ours, billing.ReportQuery{From: from, To: to, GroupBy: []string{"vendor", "tool", "day"}, Format: "csv", Vendor: "weather-a"})
	t.Logf("ours:\n%s", ours.String())
	theirs := `vendor,tool,day,calls,amount
weather-a,current_weather,2026-11-30,1,0.001
weather-a,current_weather,2026-12-01,8,0.008
weather-a,current_weather,2026-12-03,1,0.001
`
	diffs, err := billing.Reconcile(context.Background(), l, from, to, strings.NewReader(theirs))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	billing.WriteDifferences(&buf, diffs)
	golden(t, "reconcile_weather-a.csv", buf.Bytes())

	for _, bad := range []string{"", "vendor,tool\n", "vendor,tool,day,calls\nv,t,yesterday,1\n", "vendor,tool,day,calls\nv,t,2026-12-01,many\n"} {
		if _, err := billing.Reconcile(context.Background(), l, from, to, strings.NewReader(bad)); err == nil {
			t.Errorf("Reconcile(%q): no error", bad)
		}
	}
}

func TestCloudEventsExport(t *testing.T) {
	l := fixtureLedger(t)
	var buf bytes.Buffer
	if err := billing.ExportCloudEvents(context.Background(), l, billing.Filter{Tenant: "acme", To: ledgertest.Base.Add(4 * time.Hour)}, &buf, ""); err != nil {
		t.Fatal(err)
	}
	golden(t, "export_acme.jsonl", buf.Bytes())
}

func TestHandler(t *testing.T) {
	l := fixtureLedger(t)
	srv := httptest.NewServer(billing.NewHandler(l, &billing.HandlerOptions{
		Scope: func(r *http.Request) (string, string, error) {
			if r.Header.Get("X-Tenant") != "" {
				return r.Header.Get("X-Tenant"), "", nil
			}
			return "", "", nil
		},
	}))
	defer srv.Close()
	get := func(path string, hdr ...string) (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if len(hdr) == 2 {
			req.Header.Set(hdr[0], hdr[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/v1/reports/usage?from=2026-11&to=2027-01&group_by=tenant,vendor,tool,day&format=csv")
	want, _ := os.ReadFile("testdata/usage_tenant_vendor_tool_day.csv")
	if code != 200 || body != string(want) {
		t.Errorf("usage csv: %d\n%s", code, body)
	}
	code, body = get("/v1/reports/usage?from=2026-11&to=2027-01&group_by=tenant&format=csv", "X-Tenant", "acme")
	if code != 200 || strings.Contains(body, "globex") || !strings.Contains(body, "acme") {
		t.Errorf("scoped usage: %d\n%s", code, body)
	}
	for _, bad := range []string{"?group_by=week", "?from=yesterday", "?format=xml", "?from=2026-12&to=2026-11"} {
		if code, body := get("/v1/reports/usage" + bad); code != 400 || !strings.Contains(body, "invalid_request") {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}
	if code, body := get("/v1/reports/invoice?tenant=acme&from=2026-11&to=2027-01"); code != 200 || !strings.Contains(body, `"kind": "invoice"`) {
		t.Errorf("invoice: %d %s", code, body)
	}
	if code, _ := get("/v1/reports/payout?from=2026-11"); code != 400 {
		t.Errorf("payout without vendor: %d", code)
	}
	if code, body := get("/v1/reports/export?from=2026-11&to=2027-01&tenant=acme"); code != 200 || !strings.Contains(body, `"specversion":"1.0"`) {
		t.Errorf("export: %d", code)
	}
}

// Each audience sees its own money columns and statements only.
func TestAudience(t *testing.T) {
	rows := []billing.Row{{Tenant: "acme", Currency: "USD", Calls: 1, TenantCost: 2, VendorCost: 1}}
	for _, tt := range []struct {
		a             billing.Audience
		hidden, shown []string
	}{
		{billing.AudienceAll, nil, []string{"tenant_cost", "vendor_cost", "margin"}},
		{billing.AudienceTenant, []string{"vendor_cost", "margin"}, []string{"tenant_cost"}},
		{billing.AudienceVendor, []string{"tenant_cost", "margin"}, []string{"vendor_cost"}},
	} {
		for _, f := range []string{billing.FormatCSV, billing.FormatJSON, billing.FormatTable} {
			var b strings.Builder
			if err := billing.WriteRows(&b, billing.ReportQuery{GroupBy: []string{"tenant"}, Format: f, Hide: tt.a.Hidden()}, rows); err != nil {
				t.Fatal(err)
			}
			for _, h := range tt.hidden {
				if strings.Contains(b.String(), h) {
					t.Errorf("audience %d, %s: shows %s:\n%s", tt.a, f, h, b.String())
				}
			}
			for _, s := range tt.shown {
				if !strings.Contains(b.String(), s) {
					t.Errorf("audience %d, %s: lacks %s:\n%s", tt.a, f, s, b.String())
				}
			}
		}
	}
}
