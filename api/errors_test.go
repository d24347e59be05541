package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/sqlledger"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/hub/httperr"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/orchestrator"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/ui"
)

// codeStatus is the HTTP status of every error code, on every route. It
// is the table docs/errors.md documents; clients act on it.
var codeStatus = map[hub.Code]int{
	hub.CodeInvalidRequest:   400,
	hub.CodeInvalidArguments: 400,
	hub.CodeUnknownTool:      404,
	hub.CodeUnauthenticated:  401,
	hub.CodeForbidden:        403,
	hub.CodeTooLarge:         413,
	hub.CodeRateLimited:      429,
	hub.CodeOverloaded:       503,
	hub.CodeCircuitOpen:      503,
	hub.CodeBudgetExceeded:   402,
	hub.CodeTimeout:          504,
	hub.CodeUnavailable:      503,
	hub.CodeUpstream:         502,
	hub.CodeInvalidOutput:    502,
	hub.CodePrivacy:          403,
	hub.CodeQueued:           202,
	hub.CodeCanceled:         408,
	hub.CodeInternal:         500,
	"not_found":              404,
	"conflict":               409,
	"method_not_allowed":     405,
	"unsupported_media_type": 415,
	"request_timeout":        408,
}

// errorAnswer is an error response as a client reads it.
type errorAnswer struct {
	status int
	ctype  string
	raw    string
	body   struct {
		Error *struct {
			Code    hub.Code `json:"code"`
			Message string   `json:"message"`
		} `json:"error"`
	}
}

func readAnswer(t *testing.T, status int, h http.Header, body io.Reader) errorAnswer {
	t.Helper()
	b, _ := io.ReadAll(body)
	a := errorAnswer{status: status, ctype: h.Get("Content-Type"), raw: string(b)}
	if err := json.Unmarshal(b, &a.body); err != nil {
		t.Errorf("status %d, body is not JSON (%v): %q", status, err, b)
	}
	return a
}

// check reports an error answer that is not the one shape every route
// answers: JSON {"error": {"code", "message"}} with the code's status.
func (a errorAnswer) check(t *testing.T, wantCode hub.Code) {
	t.Helper()
	if !strings.HasPrefix(a.ctype, "application/json") {
		t.Errorf("Content-Type %q, want application/json: %s", a.ctype, a.raw)
	}
	if a.body.Error == nil || a.body.Error.Message == "" {
		t.Fatalf("status %d, body %s: want {\"error\": {\"code\", \"message\"}}", a.status, a.raw)
	}
	if wantCode != "" && a.body.Error.Code != wantCode {
		t.Errorf("code %q, want %q: %s", a.body.Error.Code, wantCode, a.raw)
	}
	want, ok := codeStatus[a.body.Error.Code]
	if !ok {
		t.Errorf("code %q is not in the documented table: %s", a.body.Error.Code, a.raw)
	} else if a.status != want {
		t.Errorf("code %q answered with status %d, want %d (one status per code on every route): %s", a.body.Error.Code, a.status, want, a.raw)
	}
}

func serve(t *testing.T, h http.Handler, r *http.Request) errorAnswer {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return readAnswer(t, rec.Code, rec.Header(), rec.Body)
}

func asOperator(r *http.Request) *http.Request {
	return r.WithContext(WithPrincipal(r.Context(), auth.Principal{Role: auth.RoleOperator, Tenant: DefaultTenant}))
}

// failingGateway is a real gateway over one vendor tool, v/t, whose
// pipeline fails with err before the vendor (as a budget store or a
// ledger that fails would).
func failingGateway(err error) (*hub.Gateway, *registry.Catalog) {
	cat := registry.NewCatalog()
	cat.SetVendorTools("v", []registry.ToolDef{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	ups := upstreams{"v": func(context.Context, *hub.Call) (*hub.Result, error) { return &hub.Result{}, nil }}
	fails := func(hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(context.Context, *hub.Call) (*hub.Result, error) { return nil, err })
	}
	return hub.NewGateway(cat, ups, &hub.Options{Call: []hub.Middleware{fails}}), cat
}

// failingModel is a planner's LLM that fails with err.
type failingModel struct{ err error }

func (m failingModel) Chat(context.Context, *orchestrator.ChatRequest) (*orchestrator.ChatResponse, error) {
	return nil, m.err
}

// failingAdmin answers every admin request with err.
type failingAdmin struct{ Admin }

var adminErr error

func (failingAdmin) PendingVendors(context.Context) ([]VendorChange, error) { return nil, adminErr }

// failingLedger answers every report with err.
type failingLedger struct {
	billing.Ledger
	err error
}

func (l failingLedger) Rollup(context.Context, billing.RollupQuery) ([]billing.Row, error) {
	return nil, l.err
}

// failingJobs is a job store whose reads fail with err.
type failingJobs struct {
	jobs.Store
	err error
}

func (s failingJobs) Get(context.Context, string) (*jobs.Job, error) { return nil, s.err }

// routeFamilies answer a request whose handler failed with err, one per
// family of routes that can be made to fail with any error.
var routeFamilies = []struct {
	name   string
	answer func(t *testing.T, err error) errorAnswer
}{
	{"rest", func(t *testing.T, err error) errorAnswer {
		gw, _ := failingGateway(err)
		s := NewServer(gw, nil)
		t.Cleanup(func() { s.Close() })
		ts := httptest.NewServer(s)
		t.Cleanup(ts.Close)
		resp, e := http.Post(ts.URL+"/v1/tools/v__t/call", "application/json", strings.NewReader(`{"arguments":{}}`))
		if e != nil {
			t.Fatal(e)
		}
		defer resp.Body.Close()
		return readAnswer(t, resp.StatusCode, resp.Header, resp.Body)
	}},
	{"admin", func(t *testing.T, err error) errorAnswer {
		adminErr = err
		mux := http.NewServeMux()
		AdminRoutes(failingAdmin{}, 1<<10)(mux)
		return serve(t, mux, asOperator(httptest.NewRequest("GET", "/v1/admin/vendors/pending", nil)))
	}},
	{"jobs", func(t *testing.T, err error) errorAnswer {
		mux := http.NewServeMux()
		JobRoutes(jobs.NewQueue(failingJobs{err: err}, nil), nil)(mux)
		r := httptest.NewRequest("GET", "/v1/jobs/job_1", nil)
		return serve(t, mux, r.WithContext(withTenant(r.Context(), "acme")))
	}},
	{"billing", func(t *testing.T, err error) errorAnswer {
		h := billing.NewHandler(failingLedger{err: err}, nil)
		return serve(t, h, httptest.NewRequest("GET", "/v1/reports/usage?from=2026-12", nil))
	}},
	{"orchestrator", func(t *testing.T, err error) errorAnswer {
		gw, cat := failingGateway(nil)
		p, e := orchestrator.New(orchestrator.Config{}, gw, cat, "")
		if e != nil {
			t.Fatal(e)
		}
		p.Model = failingModel{err}
		return serve(t, &orchestrator.Handler{Planner: p}, httptest.NewRequest("POST", "/v1/plan", strings.NewReader(`{"goal":"go","mode":"llm"}`)))
	}},
}

// TestErrorCodeStatusEveryRoute fails a handler of every route family with
// each error code and checks the one status and body shape a client gets.
func TestErrorCodeStatusEveryRoute(t *testing.T) {
	for _, f := range routeFamilies {
		t.Run(f.name, func(t *testing.T) {
			for code, status := range codeStatus {
				if code == hub.CodeInternal {
					continue // TestErrorTextNeverLeaks
				}
				t.Run(string(code), func(t *testing.T) {
					a := f.answer(t, &hub.Error{Code: code, Message: "the " + string(code) + " message"})
					if a.status != status {
						t.Errorf("status %d, want %d", a.status, status)
					}
					a.check(t, code)
				})
			}
		})
	}
}

// TestErrorStatusTable checks the renderer's table against the documented
// one (codeStatus), code by code; a code it does not know is 500.
func TestErrorStatusTable(t *testing.T) {
	for code, want := range codeStatus {
		if got := httperr.Status(code); got != want {
			t.Errorf("httperr.Status(%s) = %d, want %d", code, got, want)
		}
	}
	if got := httperr.Status("no_such_code"); got != 500 {
		t.Errorf("an unknown code answers %d, want 500", got)
	}
}

// TestRPCErrorData checks that the JSON-RPC errors of the front door carry
// the code table's JSON-RPC code and, in data, the error body.
func TestRPCErrorData(t *testing.T) {
	for code := range codeStatus {
		var m struct {
			Error struct {
				Code    int          `json:"code"`
				Message string       `json:"message"`
				Data    httperr.Body `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rpcError(json.RawMessage(`7`), rpcCode(code), &hub.Error{Code: code, Message: "m"}), &m); err != nil {
			t.Fatal(err)
		}
		if m.Error.Code != httperr.RPCCode(code) || m.Error.Data.Code != code {
			t.Errorf("%s: JSON-RPC error %+v, want code %d and data.code %s", code, m.Error, httperr.RPCCode(code), code)
		}
	}
}

// TestErrorTextNeverLeaks fails handlers with errors that are not typed
// (a store's, a driver's): the client gets 500 internal and a generic
// message, never the error's text.
func TestErrorTextNeverLeaks(t *testing.T) {
	const secret = `pq: password authentication failed for user "toolhub" at 10.0.0.7:5432`
	for _, f := range routeFamilies {
		t.Run(f.name, func(t *testing.T) {
			a := f.answer(t, errors.New(secret))
			a.check(t, hub.CodeInternal)
			if strings.Contains(a.raw, "10.0.0.7") || strings.Contains(a.raw, "pq:") {
				t.Errorf("the body carries the store's error text: %s", a.raw)
			}
		})
	}
	t.Run("billing over a closed ledger", func(t *testing.T) {
		l, err := sqlledger.Open(t.Context(), filepath.Join(t.TempDir(), "ledger.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Close() // the database is gone: every query fails with the driver's error
		_, derr := l.Rollup(t.Context(), billing.RollupQuery{Filter: billing.Filter{Tenant: "acme"}})
		if derr == nil {
			t.Fatal("a closed ledger answered a rollup")
		}
		h := billing.NewHandler(l, nil)
		for _, path := range []string{"/v1/reports/usage?from=2026-12", "/v1/reports/invoice?tenant=acme&from=2026-12", "/v1/reports/payout?vendor=v&from=2026-12"} {
			a := serve(t, h, httptest.NewRequest("GET", path, nil))
			a.check(t, hub.CodeInternal)
			if strings.Contains(a.raw, derr.Error()) {
				t.Errorf("%s: the body carries the driver's error %q: %s", path, derr, a.raw)
			}
		}
	})
}

// TestErrorBodyRefusals checks the refusals of routes that cannot be made
// to fail with any code: each answers the one body shape, with the status
// of its code.
func TestErrorBodyRefusals(t *testing.T) {
	modes := fallback.NewModes(&fallback.ModesOptions{Config: fallback.Config{Capabilities: map[string]fallback.CapabilityConfig{"core.cap": {Core: true}}}})
	modeMux := http.NewServeMux()
	modeMux.Handle("POST /v1/admin/capabilities/{name}/mode", modes.AdminHandler())
	dash := ui.Handler(nil)
	plan := &orchestrator.Handler{}
	tests := []struct {
		name string
		h    http.Handler
		req  *http.Request
		code hub.Code
	}{
		{"modes: body not JSON", modeMux, httptest.NewRequest("POST", "/v1/admin/capabilities/x/mode", strings.NewReader(`{`)), hub.CodeInvalidRequest},
		{"modes: unknown mode", modeMux, httptest.NewRequest("POST", "/v1/admin/capabilities/x/mode", strings.NewReader(`{"mode":"sleepy"}`)), hub.CodeInvalidRequest},
		{"modes: core switched off", modeMux, httptest.NewRequest("POST", "/v1/admin/capabilities/core.cap/mode", strings.NewReader(`{"mode":"off"}`)), "conflict"},
		{"ui: no such page", dash, httptest.NewRequest("GET", "/ui/nope.js", nil), "not_found"},
		{"ui: read-only", dash, httptest.NewRequest("POST", "/ui/api/decisions", nil), "method_not_allowed"},
		{"ui: bad limit", dash, httptest.NewRequest("GET", "/ui/api/decisions?limit=x", nil), hub.CodeInvalidRequest},
		{"plan: GET", plan, httptest.NewRequest("GET", "/v1/plan", nil), "method_not_allowed"},
		{"billing: bad range", billing.NewHandler(failingLedger{}, nil), httptest.NewRequest("GET", "/v1/reports/usage?from=yesterday", nil), hub.CodeInvalidRequest},
		{"billing: invoice without tenant", billing.NewHandler(failingLedger{}, nil), httptest.NewRequest("GET", "/v1/reports/invoice?from=2026-12", nil), hub.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serve(t, tt.h, tt.req).check(t, tt.code)
		})
	}
}
