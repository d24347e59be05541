package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/pgledger"
	"github.com/toolhub/toolhub/billing/sqlledger"
)

// report reads the usage ledger directly (no running hub needed):
//
//	toolhub report [usage] --from 2026-12 --to 2027-01 --group-by tenant,vendor,tool,day --format csv
//	toolhub report invoice --tenant acme --from 2026-12
//	toolhub report payout --vendor doubao --from 2026-12
//	toolhub report reconcile --file doubao-2026-12.csv --from 2026-12
//	toolhub report export --from 2026-12 > usage.jsonl     (CloudEvents, OpenMeter's shape)
//
// with --data ./data (SQLite, <data>/ledger.db) or --postgres DSN.
func report(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	kind := "usage"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		kind, args = args[0], args[1:]
	}
	switch kind {
	case "usage", "invoice", "payout", "reconcile", "export":
	default:
		fmt.Fprintf(stderr, "toolhub report: unknown report %q: want usage, invoice, payout, reconcile or export\n", kind)
		return errUsage
	}
	fs := flags("report", "[usage|invoice|payout|reconcile|export] [flags]",
		"report usage, invoices, vendor payouts, reconciliation or a CloudEvents export from the ledger", stderr)
	from := fs.String("from", "", "start, inclusive: RFC 3339, 2026-12-02 or 2026-12 (default: start of this month, UTC)")
	to := fs.String("to", "", "end, exclusive (default: end of from's month)")
	groupBy := fs.String("group-by", "tenant,vendor,tool,day", "usage grouping: tenant, vendor, tool and one of hour, day, month")
	format := fs.String("format", "table", "csv, json or table")
	tenant := fs.String("tenant", "", "only this tenant (required for invoice)")
	vendor := fs.String("vendor", "", "only this vendor (required for payout)")
	file := fs.String("file", "", "reconcile: the vendor's counts as CSV (vendor,tool,day,calls[,amount]); - for stdin")
	data := fs.String("data", "./data", "data folder holding ledger.db (the embedded ledger)")
	dsn := fs.String("postgres", os.Getenv("TOOLHUB_POSTGRES"), "read the PostgreSQL ledger at this DSN instead (env TOOLHUB_POSTGRES)")
	schema := fs.String("schema", pgledger.DefaultSchema, "PostgreSQL schema of the ledger")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolhub report: unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	f, t, err := billing.ParseRange(*from, *to, time.Now())
	if err != nil {
		return err
	}
	l, err := openReportLedger(ctx, *dsn, *schema, *data)
	if err != nil {
		return err
	}
	defer l.Close()

	switch kind {
	case "usage":
		var g []string
		if *groupBy != "" {
			g = strings.Split(*groupBy, ",")
		}
		return billing.Report(ctx, l, stdout, billing.ReportQuery{From: f, To: t, GroupBy: g, Format: *format, Tenant: *tenant, Vendor: *vendor})
	case "invoice", "payout":
		var st *billing.Statement
		if kind == "invoice" {
			st, err = billing.Invoice(ctx, l, *tenant, f, t)
		} else {
			st, err = billing.Payout(ctx, l, *vendor, f, t)
		}
		if err != nil {
			return err
		}
		return st.Write(stdout, *format)
	case "reconcile":
		return reportReconcile(ctx, l, f, t, *file, stdout)
	default:
		return billing.ExportCloudEvents(ctx, l, billing.Filter{From: f, To: t, Tenant: *tenant, Vendor: *vendor}, stdout, "")
	}
}

// openReportLedger opens the ledger to report on: PostgreSQL's at dsn
// (read only) when given, else the embedded one in the data folder.
func openReportLedger(ctx context.Context, dsn, schema, data string) (billing.Ledger, error) {
	if dsn != "" {
		return pgledger.Open(ctx, dsn, &pgledger.Options{Schema: schema, MaxConns: 2, ReadOnly: true})
	}
	path := filepath.Join(data, "ledger.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no ledger at %s (%v): pass --data with the hub's data folder, or --postgres", path, err)
	}
	return sqlledger.Open(ctx, path, nil)
}

// reportReconcile compares the ledger's calls in [from, to) with the
// vendor's counts in file (- for stdin), writes the differences and fails
// when there are any.
func reportReconcile(ctx context.Context, l billing.Ledger, from, to time.Time, file string, stdout io.Writer) error {
	var in io.Reader
	switch file {
	case "":
		return fmt.Errorf("reconcile needs --file with the vendor's counts (CSV: vendor,tool,day,calls[,amount])")
	case "-":
		in = os.Stdin
	default:
		fh, err := os.Open(file)
		if err != nil {
			return err
		}
		defer fh.Close()
		in = fh
	}
	diffs, err := billing.Reconcile(ctx, l, from, to, in)
	if err != nil {
		return err
	}
	if err := billing.WriteDifferences(stdout, diffs); err != nil {
		return err
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%d differences", len(diffs))
	}
	return nil
}
