package billing

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
)

// HandlerOptions configure [NewHandler]. A nil *HandlerOptions means the
// defaults.
type HandlerOptions struct {
	// Scope restricts a request: a non-empty tenant or vendor is forced
	// on every query (a tenant sees only its own usage, a vendor its own
	// payouts). An error refuses the request with 403. Nil: no
	// restriction — mount the handler behind finance/admin auth.
	Scope func(r *http.Request) (tenant, vendor string, err error)
	// Now is the clock for default ranges; nil means time.Now.
	Now func() time.Time
	// Audience says whose eyes a request's report is for: the money
	// columns it shows and the statements it may read (a tenant no
	// payouts, a vendor no invoices: 403). Nil: AudienceAll.
	Audience func(r *http.Request) Audience
}

// NewHandler serves reports from l:
//
//	GET /v1/reports/usage?from=&to=&group_by=tenant,vendor,tool,day&format=csv|json|table&tenant=&vendor=
//	GET /v1/reports/invoice?tenant=&from=&to=&format=
//	GET /v1/reports/payout?vendor=&from=&to=&format=
//	GET /v1/reports/export?from=&to=&tenant=&vendor=   (CloudEvents JSON lines)
//
// from and to are RFC 3339 times, dates (2026-12-02) or months (2026-12);
// from defaults to the start of the current month and to to the end of
// from's month. The default format is json.
func NewHandler(l Ledger, opts *HandlerOptions) http.Handler {
	h := &reportHandler{l: l}
	if opts != nil {
		h.o = *opts
	}
	if h.o.Now == nil {
		h.o.Now = time.Now
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/reports/usage", h.usage)
	mux.HandleFunc("GET /v1/reports/invoice", h.statement("invoice"))
	mux.HandleFunc("GET /v1/reports/payout", h.statement("payout"))
	mux.HandleFunc("GET /v1/reports/export", h.export)
	return mux
}

// reportHandler serves the report routes of [NewHandler].
type reportHandler struct {
	l Ledger
	o HandlerOptions
}

// params reads a report request's query, scoped to what the caller may
// see; it writes the error and reports false for a bad one.
func (h *reportHandler) params(w http.ResponseWriter, r *http.Request) (q ReportQuery, ok bool) {
	o := &h.o
	q.Tenant, q.Vendor = r.URL.Query().Get("tenant"), r.URL.Query().Get("vendor")
	if o.Scope != nil {
		t, v, err := o.Scope(r)
		if err != nil {
			httperr.Write(w, r, &hub.Error{Code: hub.CodeForbidden, Message: err.Error()}, "")
			return q, false
		}
		if t != "" {
			q.Tenant = t
		}
		if v != "" {
			q.Vendor = v
		}
	}
	var err error
	q.From, q.To, err = ParseRange(r.URL.Query().Get("from"), r.URL.Query().Get("to"), o.Now())
	if err != nil {
		httperr.Write(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: err.Error()}, "")
		return q, false
	}
	if g := r.URL.Query().Get("group_by"); g != "" {
		q.GroupBy = strings.Split(g, ",")
	}
	if o.Audience != nil {
		q.Hide = o.Audience(r).Hidden()
	}
	q.Format = r.URL.Query().Get("format")
	if q.Format == "" {
		q.Format = FormatJSON
	}
	switch q.Format {
	case FormatCSV, FormatJSON, FormatTable:
	default:
		httperr.Write(w, r, hub.Errorf(hub.CodeInvalidRequest, "format %q: want csv, json or table", q.Format), "")
		return q, false
	}
	return q, true
}

func setType(w http.ResponseWriter, format string) {
	switch format {
	case FormatCSV:
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	case FormatJSON:
		w.Header().Set("Content-Type", "application/json")
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
}

func (h *reportHandler) usage(w http.ResponseWriter, r *http.Request) {
	q, ok := h.params(w, r)
	if !ok {
		return
	}
	rq := RollupQuery{Filter: Filter{From: q.From, To: q.To, Tenant: q.Tenant, Vendor: q.Vendor}, GroupBy: q.GroupBy}
	if err := rq.Validate(); err != nil {
		httperr.Write(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: err.Error()}, "")
		return
	}
	rows, err := h.l.Rollup(r.Context(), rq)
	if err != nil {
		httperr.Write(w, r, err, "") // the ledger's error: internal, logged
		return
	}
	setType(w, q.Format)
	WriteRows(w, q, rows)
}

// statement serves a tenant's invoice or a vendor's payout (kind).
func (h *reportHandler) statement(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, ok := h.params(w, r)
		if !ok {
			return
		}
		if h.o.Audience != nil && !h.o.Audience(r).mayRead(kind) {
			httperr.Write(w, r, hub.Errorf(hub.CodeForbidden, "a %s is not for this key: tenants read invoices, vendors payouts, finance both", kind), "")
			return
		}
		var st *Statement
		var err error
		if kind == "invoice" {
			st, err = Invoice(r.Context(), h.l, q.Tenant, q.From, q.To)
		} else {
			st, err = Payout(r.Context(), h.l, q.Vendor, q.From, q.To)
		}
		if err != nil {
			httperr.Write(w, r, err, "") // invalid_request, or the ledger's error: internal, logged
			return
		}
		setType(w, q.Format)
		st.Write(w, q.Format)
	}
}

func (h *reportHandler) export(w http.ResponseWriter, r *http.Request) {
	q, ok := h.params(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	exportCloudEvents(r.Context(), h.l, Filter{From: q.From, To: q.To, Tenant: q.Tenant, Vendor: q.Vendor}, w, "", q.Hide)
}

// ParseTime reads an RFC 3339 time, a date (2026-12-02) or a month
// (2026-12), in UTC.
func ParseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02", "2006-01"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("billing: time %q: want RFC 3339 (2026-12-02T15:04:05Z), a date (2026-12-02) or a month (2026-12)", s)
}

// ParseRange reads a report's from and to. Empty from is the start of
// now's month; empty to is the end of from's month.
func ParseRange(from, to string, now time.Time) (time.Time, time.Time, error) {
	var f, t time.Time
	var err error
	if from == "" {
		now = now.UTC()
		f = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	} else if f, err = ParseTime(from); err != nil {
		return f, t, err
	}
	if to == "" {
		t = time.Date(f.Year(), f.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0)
	} else if t, err = ParseTime(to); err != nil {
		return f, t, err
	}
	if t.Before(f) {
		return f, t, errors.New("billing: the range ends before it starts (to < from)")
	}
	return f, t, nil
}
