// Package security tests toolhub's front doors with authentication on:
// tenant isolation, key lifecycle, vendor self-service, SSRF, privacy
// levels, and that no key ever reaches a log.
package security

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type env struct {
	t    *testing.T
	lab  *drill.Lab
	logs *syncBuffer
	keys map[string]string // name → token
}

func setup(t *testing.T, allow ...string) *env {
	logs := &syncBuffer{}
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Config: `
auth: {enabled: true}
outbound: {loopback_only: true, allow: ["{{vendors_addr}}"` + strings.Repeat(`, "`+strings.Join(allow, `", "`)+`"`, min(len(allow), 1)) + `]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    max_data_level: 1
    probe: {disabled: true}
  - id: maps
    mcp: {transport: http, url: "{{vendors}}/maps/mcp"}
    probe: {disabled: true}
tenants:
  - {id: acme, tools: ["weather-a__*"]}
  - {id: globex, tools: ["maps__*"]}
  - {id: secret, tools: ["weather-a__*"], data_level: 3}
`})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	e := &env{t: t, lab: l, logs: logs, keys: map[string]string{}}
	for name, k := range map[string]auth.Key{
		"operator": {Role: auth.RoleOperator},
		"acme":     {Role: auth.RoleTenant, Tenant: "acme"},
		"globex":   {Role: auth.RoleTenant, Tenant: "globex"},
		"vx":       {Role: auth.RoleVendor, Vendor: "vx"},
		"finance":  {Role: auth.RoleFinance},
	} {
		tok, _, err := auth.Issue(context.Background(), l.App.Keys, k, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		e.keys[name] = tok
	}
	return e
}

// do sends a request with the named key ("" for none) and decodes the answer.
func (e *env) do(key, method, path string, body any) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.lab.HubURL+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok, ok := e.keys[key]; ok {
		req.Header.Set("Authorization", "Bearer "+tok)
	} else if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if len(b) > 0 && json.Unmarshal(b, &m) != nil {
		m = map[string]any{"raw": string(b)}
	}
	return resp.StatusCode, m
}

func code(m map[string]any) any {
	e, _ := m["error"].(map[string]any)
	return e["code"]
}

func toolNames(m map[string]any) []string {
	var out []string
	tools, _ := m["tools"].([]any)
	for _, t := range tools {
		out = append(out, t.(map[string]any)["name"].(string))
	}
	return out
}

func TestTenantIsolationAndKeys(t *testing.T) {
	e := setup(t)
	city := map[string]any{"arguments": map[string]any{"city": "Oslo"}}
	route := map[string]any{"arguments": map[string]any{"from": "A", "to": "B"}}

	if st, m := e.do("", "GET", "/v1/tools", nil); st != 401 || code(m) != "unauthenticated" {
		t.Errorf("no key: %d %v", st, m)
	}
	if st, _ := e.do("thk_0000000000000000_"+strings.Repeat("x", 43), "GET", "/v1/tools", nil); st != 401 {
		t.Errorf("a made-up key: %d", st)
	}
	// Each tenant lists exactly what it may call.
	_, m := e.do("acme", "GET", "/v1/tools", nil)
	if got := toolNames(m); len(got) != 1 || got[0] != "weather-a__current_weather" {
		t.Errorf("acme lists %v", got)
	}
	if st, _ := e.do("acme", "POST", "/v1/tools/weather-a__current_weather/call", city); st != 200 {
		t.Errorf("acme calling its tool: %d", st)
	}
	if st, m := e.do("acme", "POST", "/v1/tools/maps__route/call", route); st != 404 || code(m) != "unknown_tool" {
		t.Errorf("acme calling globex's tool: %d %v", st, m)
	}
	if st, _ := e.do("globex", "POST", "/v1/tools/maps__route/call", route); st != 200 {
		t.Errorf("globex calling its tool: %d", st)
	}
	// Roles: finance and vendor keys call no tools; only operators read metrics.
	for _, k := range []string{"finance", "vx", "operator"} {
		if st, m := e.do(k, "GET", "/v1/tools", nil); st != 403 || code(m) != "forbidden" {
			t.Errorf("%s key listing tools: %d %v", k, st, m)
		}
	}
	if st, _ := e.do("acme", "GET", "/metrics", nil); st != 403 {
		t.Errorf("a tenant read the metrics: %d", st)
	}
	if st, _ := e.do("operator", "GET", "/v1/vendors", nil); st != 200 {
		t.Errorf("operator listing vendors: %d", st)
	}
	if st, _ := e.do("acme", "GET", "/v1/vendors", nil); st != 403 {
		t.Errorf("a tenant listing vendors: %d", st)
	}
	// Key lifecycle through the operator API: issue, rotate, revoke, expire.
	st, m := e.do("operator", "POST", "/v1/admin/keys", map[string]any{"role": "tenant", "tenant": "acme", "name": "ci"})
	if st != 200 {
		t.Fatalf("issue: %d %v", st, m)
	}
	tok := m["token"].(string)
	id := m["key"].(map[string]any)["id"].(string)
	if st, _ := e.do(tok, "GET", "/v1/tools", nil); st != 200 {
		t.Errorf("a fresh key: %d", st)
	}
	st, m = e.do("operator", "POST", "/v1/admin/keys/"+id+"/rotate", nil)
	newTok, _ := m["token"].(string)
	if st != 200 || newTok == "" {
		t.Fatalf("rotate: %d %v", st, m)
	}
	if st, _ := e.do(tok, "GET", "/v1/tools", nil); st != 401 {
		t.Errorf("the rotated-out key: %d", st)
	}
	newID := m["key"].(map[string]any)["id"].(string)
	if st, _ := e.do("operator", "DELETE", "/v1/admin/keys/"+newID, nil); st != 200 {
		t.Errorf("revoke: %d", st)
	}
	if st, _ := e.do(newTok, "GET", "/v1/tools", nil); st != 401 {
		t.Errorf("a revoked key: %d", st)
	}
	short, _, err := auth.Issue(t.Context(), e.lab.App.Keys, auth.Key{Role: auth.RoleTenant, Tenant: "acme"}, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := e.do(short, "GET", "/v1/tools", nil); st != 401 {
		t.Errorf("an expired key: %d", st)
	}
	// Usage: each tenant sees only its own; finance sees everyone's.
	if err := e.lab.App.Meter.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	month := time.Now().UTC().Format("2006-01")
	usage := func(key string) string {
		_, m := e.do(key, "GET", "/v1/reports/usage?from="+month+"&group_by=tenant&format=json", nil)
		return fmt.Sprint(m)
	}
	if u := usage("acme"); !strings.Contains(u, "acme") || strings.Contains(u, "globex") {
		t.Errorf("acme's usage report: %s", u)
	}
	if u := usage("finance"); !strings.Contains(u, "acme") || !strings.Contains(u, "globex") {
		t.Errorf("finance's usage report: %s", u)
	}
	e.noKeysInLogs(tok, newTok, short)
}

// noKeysInLogs greps everything toolhub logged for every token.
func (e *env) noKeysInLogs(extra ...string) {
	e.t.Helper()
	e.lab.App.Gov.Flush() // the decision log is written off the call path
	logs := e.logs.String()
	if !strings.Contains(logs, `"msg":"call"`) {
		e.t.Fatal("no decision-log lines captured; the grep below would prove nothing")
	}
	for name, tok := range e.keys {
		if strings.Contains(logs, tok) || strings.Contains(logs, tok[len(tok)-20:]) {
			e.t.Errorf("the %s key appears in the logs", name)
		}
	}
	for _, tok := range extra {
		if strings.Contains(logs, tok[len(tok)-20:]) {
			e.t.Error("a key appears in the logs")
		}
	}
}

func TestPrivacyLevels(t *testing.T) {
	e := setup(t)
	tok, _, err := auth.Issue(t.Context(), e.lab.App.Keys, auth.Key{Role: auth.RoleTenant, Tenant: "secret"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e.keys["secret"] = tok
	before := e.lab.Vendors["weather-a"].Counters().CallsTotal
	city := map[string]any{"arguments": map[string]any{"city": "Oslo"}}
	// weather-a takes at most L1: an L3 call, declared or by the tenant's
	// default, never reaches it.
	req := map[string]any{"arguments": map[string]any{"city": "Oslo"}, "data_level": 3}
	if st, m := e.do("acme", "POST", "/v1/tools/weather-a__current_weather/call", req); st != 403 || code(m) != "privacy_refused" {
		t.Fatalf("L3 call to an L1 vendor: %d %v", st, m)
	}
	if st, m := e.do("secret", "POST", "/v1/tools/weather-a__current_weather/call", city); st != 403 || code(m) != "privacy_refused" {
		t.Fatalf("a tenant whose data is L3 by default: %d %v", st, m)
	}
	if st, _ := e.do("acme", "POST", "/v1/tools/weather-a__current_weather/call", map[string]any{"arguments": map[string]any{"city": "Oslo"}, "data_level": 1}); st != 200 {
		t.Fatalf("L1 call to an L1 vendor: %d", st)
	}
	if got := e.lab.Vendors["weather-a"].Counters().CallsTotal - before; got != 1 {
		t.Errorf("weather-a received %d calls, want only the L1 one", got)
	}
}

func TestVendorSelfServiceAndSSRF(t *testing.T) {
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	e := setup(t, redirect.Listener.Addr().String())
	url := e.lab.URL + "/weather-b/mcp"
	// A vendor key registers its own vendor; the change is validated live.
	st, m := e.do("vx", "POST", "/v1/vendors/vx", map[string]any{"mcp": map[string]any{"transport": "http", "url": url}})
	if st != 200 || m["status"] != "live" || m["version"] != 1.0 {
		t.Fatalf("register: %d %v", st, m)
	}
	if err := e.lab.WaitReady(t.Context(), "vx"); err != nil {
		t.Fatal(err)
	}
	// It sees only itself; it cannot touch another vendor.
	_, m = e.do("vx", "GET", "/v1/vendors", nil)
	if vs := m["vendors"].([]any); len(vs) != 1 || vs[0].(map[string]any)["id"] != "vx" {
		t.Errorf("vx sees %v", vs)
	}
	if st, m := e.do("vx", "PUT", "/v1/vendors/weather-a", map[string]any{"mcp": map[string]any{"transport": "http", "url": url}}); st != 403 {
		t.Errorf("vx changing weather-a: %d %v", st, m)
	}
	if st, m := e.do("vx", "POST", "/v1/vendors/vx2", map[string]any{"mcp": map[string]any{"transport": "http", "url": url}}); st != 403 {
		t.Errorf("vx registering vx2: %d %v", st, m)
	}
	if st, _ := e.do("vx", "PUT", "/v1/vendors/vx", map[string]any{"mcp": map[string]any{"transport": "stdio", "command": "/bin/sh"}}); st != 403 {
		t.Errorf("a vendor key registered a stdio command: %d", st)
	}
	// A vendor key cannot have the hub send it the hub's own secrets: its
	// headers may refer only to the variables set aside for it.
	for _, h := range []map[string]any{
		{"Authorization": "Bearer ${TOOLHUB_LLM_API_KEY}"},
		{"X-Key": "${TOOLHUB_VENDOR_WEATHER_A_KEY}"}, // another vendor's secret
	} {
		st, m := e.do("vx", "PUT", "/v1/vendors/vx", map[string]any{"mcp": map[string]any{"transport": "http", "url": url, "headers": h}})
		if st != 403 || !strings.Contains(fmt.Sprint(m), "TOOLHUB_VENDOR_VX_") {
			t.Errorf("a vendor key referred to %v: %d %v", h, st, m)
		}
		st, m = e.do("vx", "PUT", "/v1/vendors/vx", map[string]any{"a2a": map[string]any{"card": url, "headers": h}})
		if st != 403 {
			t.Errorf("a vendor key referred to %v in an A2A spec: %d %v", h, st, m)
		}
	}
	t.Setenv("TOOLHUB_VENDOR_VX_TOKEN", "vx-secret")
	if st, m := e.do("vx", "PUT", "/v1/vendors/vx", map[string]any{"mcp": map[string]any{"transport": "http", "url": url,
		"headers": map[string]any{"Authorization": "Bearer ${TOOLHUB_VENDOR_VX_TOKEN}"}}}); st != 200 {
		t.Errorf("a vendor key referring to its own variable: %d %v", st, m)
	}
	// SSRF: private, metadata, a name resolving to loopback, a redirect to a refused address.
	for _, u := range []string{"http://10.0.0.7/mcp", "http://169.254.169.254/mcp", "http://localhost:9/mcp", "http://[::1]:9/mcp"} {
		st, m := e.do("vx", "PUT", "/v1/vendors/vx", map[string]any{"mcp": map[string]any{"transport": "http", "url": u}})
		if st != 403 || !strings.Contains(fmt.Sprint(m), "refuses private") {
			t.Errorf("%s: %d %v", u, st, m)
		}
	}
	st, m = e.do("vx", "PUT", "/v1/vendors/vx", map[string]any{"mcp": map[string]any{"transport": "http", "url": redirect.URL + "/mcp"}})
	if st != 503 || !strings.Contains(fmt.Sprint(m), "metadata") {
		t.Errorf("a redirect to the metadata address: %d %v", st, m)
	}
	// The guard refused each of these itself: the outbound sandbox
	// (loopback_only) never had to stop a dial off this machine.
	assertStayedOnLoopback(t, e.logs.String)
	// A breaking change (its tool disappears) waits for an operator.
	st, m = e.do("vx", "PUT", "/v1/vendors/vx", map[string]any{"mcp": map[string]any{"transport": "http", "url": e.lab.URL + "/places/mcp"}})
	if st != 202 || m["status"] != "pending_approval" || !strings.Contains(fmt.Sprint(m["breaking"]), `"current_weather" removed`) {
		t.Fatalf("breaking update: %d %v", st, m)
	}
	if _, ok := e.lab.App.Catalog.VendorTool("vx", "current_weather"); !ok {
		t.Fatal("a pending change went live")
	}
	if st, _ := e.do("vx", "POST", "/v1/admin/vendors/vx/approve", nil); st != 403 {
		t.Errorf("a vendor approved its own change: %d", st)
	}
	if st, m := e.do("operator", "POST", "/v1/admin/vendors/vx/approve", nil); st != 200 || m["version"] != 3.0 {
		t.Fatalf("approve: %d %v", st, m)
	}
	// Versions and rollback.
	_, m = e.do("vx", "GET", "/v1/vendors/vx/versions", nil)
	if vs := m["versions"].([]any); len(vs) != 3 {
		t.Errorf("versions = %v", m)
	}
	if st, m := e.do("operator", "POST", "/v1/vendors/vx/rollback", map[string]any{"version": 1}); st != 200 || m["version"] != 4.0 {
		t.Errorf("rollback: %d %v", st, m)
	}
	// The audit log says who did what.
	_, m = e.do("operator", "GET", "/v1/admin/audit", nil)
	var actions []string
	for _, x := range m["entries"].([]any) {
		en := x.(map[string]any)
		actions = append(actions, en["action"].(string)+" by "+en["who"].(map[string]any)["role"].(string))
	}
	for _, want := range []string{"vendor.register by vendor", "vendor.pending by vendor", "vendor.approve by operator", "vendor.rollback by operator"} {
		if !strings.Contains(strings.Join(actions, ","), want) {
			t.Errorf("audit log lacks %q: %v", want, actions)
		}
	}
	if st, _ := e.do("vx", "GET", "/v1/admin/audit", nil); st != 403 {
		t.Errorf("a vendor read the audit log: %d", st)
	}
}
