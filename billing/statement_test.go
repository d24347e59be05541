package billing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
)

// TestPayoutNamesItsVendor: every format of a payout shows the vendor on
// each line (the column was empty).
func TestPayoutNamesItsVendor(t *testing.T) {
	pay, err := billing.Payout(context.Background(), fixtureLedger(t), "doubao", from, to)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"csv", "table", "json"} {
		var buf bytes.Buffer
		if err := pay.Write(&buf, f); err != nil {
			t.Fatal(err)
		}
		switch f {
		case "csv":
			if !strings.Contains(buf.String(), "\ndoubao,generate_image,USD,") {
				t.Errorf("csv payout without its vendor:\n%s", buf.String())
			}
		case "table":
			if !strings.Contains(buf.String(), "doubao  generate_image") {
				t.Errorf("table payout without its vendor:\n%s", buf.String())
			}
		case "json":
			var st billing.Statement
			json.Unmarshal(buf.Bytes(), &st)
			if len(st.Lines) == 0 || st.Lines[0].Vendor != "doubao" {
				t.Errorf("json payout without its vendor:\n%s", buf.String())
			}
		}
	}
}

// TestInvoiceKeepsRefusedCallsApart: calls refused before any vendor ran
// (an unknown tool) are not billable lines; they are counted apart.
func TestInvoiceKeepsRefusedCallsApart(t *testing.T) {
	l := fixtureLedger(t)
	at := ledgertest.Base.Add(3 * 60 * 60 * 1e9)
	var evs []billing.Event
	for _, id := range []string{"nope-1", "nope-2"} {
		evs = append(evs, billing.Event{Key: billing.CallKey(id), CallID: id, Kind: billing.KindCall, Time: at, Ingested: at,
			Tenant: "acme", Tool: "no_such_tool", Outcome: billing.OutcomeRejected, Reason: "unknown_tool: no tool no_such_tool",
			Units: billing.Units{billing.UnitCalls: 1}, Currency: "USD"})
	}
	if err := l.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	inv, err := billing.Invoice(context.Background(), l, "acme", from, to)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range inv.Lines {
		if line.Tool == "no_such_tool" || line.Calls == 0 && line.Amount == 0 {
			t.Errorf("a billable line with nothing billed: %+v", line)
		}
	}
	found := false
	for _, r := range inv.Refused {
		if r.Tool == "no_such_tool" {
			found = r.Refused == 2
		}
	}
	if !found {
		t.Errorf("refused calls to an unknown tool not counted apart: %+v", inv.Refused)
	}
	var buf bytes.Buffer
	inv.Write(&buf, "table")
	if !strings.Contains(buf.String(), "not billed (refused or failed, charged nothing)") || !strings.Contains(buf.String(), "no_such_tool") {
		t.Errorf("table invoice:\n%s", buf.String())
	}
}

// TestReportsExplainTheirUnits: calls and attempts are different units;
// the reports say so themselves.
func TestReportsExplainTheirUnits(t *testing.T) {
	ctx := context.Background()
	l := fixtureLedger(t)
	var buf bytes.Buffer
	if err := billing.Report(ctx, l, &buf, billing.ReportQuery{From: from, To: to, GroupBy: []string{"tenant"}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"calls: tenant calls", "attempts: requests toolhub sent to vendors", "paid: the attempts toolhub pays"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("usage table does not explain %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	billing.Report(ctx, l, &buf, billing.ReportQuery{From: from, To: to, GroupBy: []string{"tenant"}, Format: "json"})
	var doc struct{ Units string }
	if json.Unmarshal(buf.Bytes(), &doc); !strings.Contains(doc.Units, "attempts:") {
		t.Errorf("usage json has no units: %s", buf.String())
	}
	pay, _ := billing.Payout(ctx, l, "doubao", from, to)
	buf.Reset()
	pay.Write(&buf, "table")
	if !strings.Contains(buf.String(), "calls: paid attempts") {
		t.Errorf("payout does not say its calls are attempts:\n%s", buf.String())
	}
}

// TestPayoutOverHTTPNamesItsVendor: GET /v1/reports/payout too.
func TestPayoutOverHTTPNamesItsVendor(t *testing.T) {
	srv := httptest.NewServer(billing.NewHandler(fixtureLedger(t), nil))
	defer srv.Close()
	for format, want := range map[string]string{"csv": "\ndoubao,generate_image,", "json": `"vendor": "doubao"`} {
		resp, err := http.Get(srv.URL + "/v1/reports/payout?vendor=doubao&from=2026-11&to=2027-01&format=" + format)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("payout %s over HTTP: %d\n%s", format, resp.StatusCode, b)
		}
	}
}
