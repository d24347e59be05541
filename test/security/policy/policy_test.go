// Package policy attacks the guards on configuration, approvals and
// budgets of a real `toolhub serve` process: a vendor key loosening its
// own privacy settings or rolling back past an approval, a SIGHUP reload
// that would half-apply or empty the config, and a restart that would let
// a tenant spend its budget again.
//
// The example vendors run in the test process; toolhub runs as a child
// process built in TestMain.
package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/app"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

var toolhubBin string

func TestMain(m *testing.M) {
	os.Exit(drilltest.Run(m, "../../..", &toolhubBin))
}

// hub is one `toolhub serve` process, its config file and data folder,
// the example vendors it reaches, and API keys issued for it.
type hub struct {
	t       *testing.T
	proc    *drill.Process
	cfgPath string
	data    string
	vaddr   string // host:port of the example vendors
	vendors map[string]*vendors.Vendor
	keys    map[string]string // name → token
}

// startHub serves the example vendors named, issues the keys (name →
// key; nil with auth off), writes cfg ({{vendors}} is the vendors' base
// URL, {{addr}} their host:port) and starts toolhub on it.
func startHub(t *testing.T, cfg string, keys map[string]auth.Key, names ...string) *hub {
	t.Helper()
	opts := map[string]*vendors.Options{}
	for _, n := range names {
		opts[n] = nil
	}
	vs, addr, closeVendors, err := vendors.ServeVendors(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeVendors)
	h := &hub{t: t, data: t.TempDir(), cfgPath: filepath.Join(t.TempDir(), "toolhub.yaml"), vaddr: addr, vendors: vs, keys: map[string]string{}}
	h.writeConfig(cfg)
	if len(keys) > 0 {
		ks, err := app.OpenKeys(t.Context(), &config.Config{Data: h.data})
		if err != nil {
			t.Fatal(err)
		}
		for name, k := range keys {
			tok, _, err := auth.Issue(t.Context(), ks, k, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			h.keys[name] = tok
		}
		ks.Close()
	}
	h.start()
	return h
}

func (h *hub) writeConfig(cfg string) {
	h.t.Helper()
	cfg = strings.NewReplacer("{{vendors}}", "http://"+h.vaddr, "{{addr}}", h.vaddr).Replace(cfg)
	if err := os.WriteFile(h.cfgPath, []byte(cfg), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

func (h *hub) start() {
	h.t.Helper()
	p, err := drill.StartProcess(drill.ProcessOptions{Binary: toolhubBin, Config: h.cfgPath, Data: h.data})
	if err != nil {
		h.t.Fatal(err)
	}
	h.proc = p
	h.t.Cleanup(p.Kill) // after a Stop, a no-op
	if _, err := p.WaitListening(h.t.Context(), 2*time.Minute); err != nil {
		h.t.Fatalf("%v\n%s", err, p.Tail(30))
	}
}

// do sends a request with the named key ("" for none) and decodes the
// JSON answer; "raw" holds the body as text.
func (h *hub) do(key, method, path string, body any) (int, map[string]any) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(h.t.Context(), method, h.proc.URL()+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok, ok := h.keys[key]; ok {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	m["raw"] = string(b)
	return resp.StatusCode, m
}

func code(m map[string]any) any {
	e, _ := m["error"].(map[string]any)
	return e["code"]
}

// call calls a tool as key with arguments and, if level ≥ 0, a declared
// data level.
func (h *hub) call(key, tool string, args map[string]any, level int) (int, map[string]any) {
	h.t.Helper()
	body := map[string]any{"arguments": args}
	if level >= 0 {
		body["data_level"] = level
	}
	return h.do(key, "POST", "/v1/tools/"+tool+"/call", body)
}

// tools lists the tools key sees.
func (h *hub) tools(key string) []string {
	h.t.Helper()
	st, m := h.do(key, "GET", "/v1/tools", nil)
	if st != 200 {
		h.t.Fatalf("GET /v1/tools: %d %v", st, m["raw"])
	}
	var out []string
	ts, _ := m["tools"].([]any)
	for _, t := range ts {
		out = append(out, t.(map[string]any)["name"].(string))
	}
	slices.Sort(out)
	return out
}

// waitTools waits until key sees exactly want.
func (h *hub) waitTools(key string, want ...string) {
	h.t.Helper()
	slices.Sort(want)
	drilltest.WaitFor(h.t, time.Minute, fmt.Sprintf("%s sees %v", key, want), func() bool { return slices.Equal(h.tools(key), want) })
}

// reload writes cfg, sends SIGHUP and returns the log line that answers it.
func (h *hub) reload(cfg string) string {
	h.t.Helper()
	h.writeConfig(cfg)
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(h.proc.Logs(), "\n") {
			if strings.Contains(l, `"msg":"config reload`) {
				out = append(out, l)
			}
		}
		return out
	}
	before := len(lines())
	if err := h.proc.Signal(syscall.SIGHUP); err != nil {
		h.t.Fatal(err)
	}
	drilltest.WaitFor(h.t, time.Minute, "the reload's log line", func() bool { return len(lines()) > before })
	return lines()[before]
}

var vendorKeys = map[string]auth.Key{
	"operator": {Role: auth.RoleOperator},
	"acme":     {Role: auth.RoleTenant, Tenant: "acme"},
	"vx":       {Role: auth.RoleVendor, Vendor: "vx"},
}

const selfServiceConfig = `addr: 127.0.0.1:0
auth: {enabled: true}
outbound: {allow: ["{{addr}}"]}
tenants:
  - {id: acme, tools: ["vx__*"]}
`

// Issue 12, defect 6: a vendor key raised its own max_data_level (or dropped a
// redaction rule) and private data flowed to it at once, with no operator
// involved.
func TestVendorPrivacyLooseningWaitsForApproval(t *testing.T) {
	h := startHub(t, selfServiceConfig, vendorKeys, vendors.WeatherA)
	spec := func(level int, redact ...string) map[string]any {
		return map[string]any{"mcp": map[string]any{"transport": "http", "url": "http://" + h.vaddr + "/weather-a/mcp"},
			"max_data_level": level, "redact": redact, "probe": map[string]any{"disabled": true}}
	}
	if st, m := h.do("vx", "POST", "/v1/vendors/vx", spec(0, "phone")); st != 200 || m["status"] != "live" {
		t.Fatalf("register: %d %v", st, m["raw"])
	}
	h.waitTools("acme", "vx__current_weather")
	phone := map[string]any{"city": "+1 555 123 4567"}
	if st, m := h.call("acme", "vx__current_weather", phone, 0); st != 200 || !strings.Contains(m["raw"].(string), "[redacted:phone]") {
		t.Fatalf("a phone number reached a vendor with redact [phone]: %d %v", st, m["raw"])
	}
	if st, m := h.call("acme", "vx__current_weather", map[string]any{"city": "Oslo"}, 2); st != 403 || code(m) != "privacy_refused" {
		t.Fatalf("L2 data to an L0 vendor: %d %v", st, m["raw"])
	}
	calls := h.vendors[vendors.WeatherA].Counters().CallsTotal

	// The vendor raises its own level: the change waits for an operator.
	st, m := h.do("vx", "PUT", "/v1/vendors/vx", spec(3, "phone"))
	if st != 202 || m["status"] != "pending_approval" || !strings.Contains(fmt.Sprint(m["breaking"]), "max_data_level raised from 0 to 3") {
		t.Errorf("vendor raising its max_data_level: %d %v", st, m["raw"])
	}
	if st, m := h.call("acme", "vx__current_weather", map[string]any{"city": "Oslo"}, 2); st != 403 || code(m) != "privacy_refused" {
		t.Errorf("L2 data after the vendor raised its own level, unapproved: %d %v", st, m["raw"])
	}
	// The vendor drops its redaction rule: the same.
	st, m = h.do("vx", "PUT", "/v1/vendors/vx", spec(0))
	if st != 202 || m["status"] != "pending_approval" || !strings.Contains(fmt.Sprint(m["breaking"]), `redaction rule "phone" dropped`) {
		t.Errorf("vendor dropping its redaction rule: %d %v", st, m["raw"])
	}
	if st, m := h.call("acme", "vx__current_weather", phone, 0); st != 200 || strings.Contains(m["raw"].(string), "555 123") {
		t.Errorf("a phone number reached the vendor after it dropped its rule, unapproved: %d %v", st, m["raw"])
	}
	if got := h.vendors[vendors.WeatherA].Counters().CallsTotal - calls; got != 1 {
		t.Errorf("the vendor received %d calls, want the one L0 call", got)
	}
	// An operator approves: now the rule is gone.
	if st, m := h.do("operator", "POST", "/v1/admin/vendors/vx/approve", nil); st != 200 || m["status"] != "live" {
		t.Fatalf("approve: %d %v", st, m["raw"])
	}
	if st, m := h.call("acme", "vx__current_weather", phone, 0); st != 200 || !strings.Contains(m["raw"].(string), "555 123") {
		t.Errorf("after approval: %d %v", st, m["raw"])
	}
	// Sending the vendor less needs no approval.
	if st, m := h.do("vx", "PUT", "/v1/vendors/vx", spec(0, "phone", "national_id")); st != 200 || m["status"] != "live" {
		t.Errorf("vendor adding redaction rules: %d %v", st, m["raw"])
	}
}

// Issue 12, defect 7: rolling back to an older version made the same breaking change
// live that a PUT has to wait for an operator for.
func TestRollbackWaitsForApproval(t *testing.T) {
	h := startHub(t, selfServiceConfig, vendorKeys, vendors.WeatherA, vendors.Places)
	spec := func(name string) map[string]any {
		return map[string]any{"mcp": map[string]any{"transport": "http", "url": "http://" + h.vaddr + "/" + name + "/mcp"},
			"probe": map[string]any{"disabled": true}}
	}
	if st, m := h.do("vx", "POST", "/v1/vendors/vx", spec(vendors.WeatherA)); st != 200 {
		t.Fatalf("register: %d %v", st, m["raw"])
	}
	h.waitTools("acme", "vx__current_weather")
	if st, m := h.do("vx", "PUT", "/v1/vendors/vx", spec(vendors.Places)); st != 202 {
		t.Fatalf("breaking update: %d %v", st, m["raw"])
	}
	if st, m := h.do("operator", "POST", "/v1/admin/vendors/vx/approve", nil); st != 200 || m["version"] != 2.0 {
		t.Fatalf("approve: %d %v", st, m["raw"])
	}
	h.waitTools("acme", "vx__search_restaurants")

	// Rolling back to version 1 removes search_restaurants: an operator decides.
	st, m := h.do("vx", "POST", "/v1/vendors/vx/rollback", map[string]any{"version": 1})
	if st != 202 || m["status"] != "pending_approval" || !strings.Contains(fmt.Sprint(m["breaking"]), `"search_restaurants" removed`) {
		t.Errorf("vendor rolling back past a breaking change: %d %v", st, m["raw"])
	}
	if got := h.tools("acme"); !slices.Equal(got, []string{"vx__search_restaurants"}) {
		t.Errorf("after an unapproved rollback acme sees %v", got)
	}
	if st, m := h.do("operator", "POST", "/v1/admin/vendors/vx/approve", nil); st != 200 || m["version"] != 3.0 {
		t.Fatalf("approve the rollback: %d %v", st, m["raw"])
	}
	h.waitTools("acme", "vx__current_weather")
	// An operator's own rollback needs nobody.
	if st, m := h.do("operator", "POST", "/v1/vendors/vx/rollback", map[string]any{"version": 2}); st != 200 || m["version"] != 4.0 {
		t.Errorf("operator rollback: %d %v", st, m["raw"])
	}
	_, m = h.do("operator", "GET", "/v1/admin/audit", nil)
	if !strings.Contains(m["raw"].(string), `"vendor.rollback"`) {
		t.Errorf("the audit log lacks the rollback: %v", m["raw"])
	}
}

const reloadBase = `addr: 127.0.0.1:0
auth: {enabled: true}
outbound: {allow: ["{{addr}}"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    probe: {disabled: true}
  - id: maps
    mcp: {transport: http, url: "{{vendors}}/maps/mcp"}
    probe: {disabled: true}
billing:
  prices:
    - version: "t1"
      effective: 2020-01-01T00:00:00Z
      entries:
        - {vendor: weather-a, tool: "*", tenant: {per_call: "0.001"}, payout: {per_call: "0.0005"}}
`

const reloadTenants = `tenants:
  - {id: acme, tools: ["weather-a__*"]}
  - {id: globex, tools: ["maps__*"]}
`

// Issue 12, defect 10: SIGHUP said "config reloaded" but left auth, outbound and
// budgets as they were, and took an empty file (every vendor and tenant
// gone; a tenant key then saw every tool).
func TestReloadAppliesEveryKeyOrRefuses(t *testing.T) {
	keys := map[string]auth.Key{
		"operator": {Role: auth.RoleOperator},
		"acme":     {Role: auth.RoleTenant, Tenant: "acme"},
		"globex":   {Role: auth.RoleTenant, Tenant: "globex"},
	}
	h := startHub(t, reloadBase+reloadTenants, keys, vendors.WeatherA, vendors.Maps, vendors.Places)
	h.waitTools("acme", "weather-a__current_weather")
	h.waitTools("globex", "maps__route")
	city := map[string]any{"city": "Oslo"}
	route := map[string]any{"from": "A", "to": "B"}
	for range 2 {
		if st, m := h.call("acme", "weather-a__current_weather", city, -1); st != 200 {
			t.Fatalf("acme: %d %v", st, m["raw"])
		}
	}

	// Budgets: a budget added by reload applies, counting what was spent.
	budget := "  budgets: [{tenant: acme, period: day, limit: \"0.002\"}]\n"
	if l := h.reload(reloadBase + budget + reloadTenants); !strings.Contains(l, `"config reloaded"`) {
		t.Fatalf("adding a budget: %s", l)
	}
	if st, m := h.call("acme", "weather-a__current_weather", city, -1); code(m) != "budget_exceeded" {
		t.Errorf("acme spent 0.002 of a 0.002 day budget added by reload, and calls again: %d %v", st, m["raw"])
	}

	// Degenerate configs are refused, and the old one keeps serving.
	if l := h.reload(reloadBase + budget); !strings.Contains(l, "refused") || !strings.Contains(l, "declares no tenants") {
		t.Errorf("a reload dropping every tenant: %s", l)
	}
	if l := h.reload(""); !strings.Contains(l, "refused") || !strings.Contains(l, "config is empty") {
		t.Errorf("a reload of an empty file: %s", l)
	}
	if got := h.tools("acme"); !slices.Equal(got, []string{"weather-a__current_weather"}) {
		t.Errorf("after refused reloads acme sees %v", got)
	}

	// Keys a reload cannot apply are named, and nothing is applied.
	noAuth := strings.Replace(reloadBase, "auth: {enabled: true}", "auth: {enabled: false}\nmax_body_bytes: 2048", 1)
	deny := "  deny: [\"127.0.0.1\"]\n"
	l := h.reload(strings.Replace(noAuth, "outbound: {allow: [\"{{addr}}\"]}", "outbound:\n  allow: [\"{{addr}}\"]\n"+deny, 1) + budget + reloadTenants)
	if !strings.Contains(l, "refused") || !strings.Contains(l, "max_body_bytes, auth changed") || !strings.Contains(l, "restart") {
		t.Errorf("a reload switching auth off: %s", l)
	}
	if st, _ := h.do("", "GET", "/v1/tools", nil); st != 401 {
		t.Errorf("after a refused reload switching auth off, no key: %d", st)
	}
	if st, m := h.call("globex", "maps__route", route, -1); st != 200 {
		t.Errorf("after a refused reload denying the vendors' address: %d %v", st, m["raw"])
	}

	// Outbound: a deny list added by reload applies to new vendors and cuts
	// the vendors already connected there.
	calls := h.vendors[vendors.Maps].Counters().CallsTotal
	cfg := strings.Replace(reloadBase, "outbound: {allow: [\"{{addr}}\"]}", "outbound:\n  allow: [\"{{addr}}\"]\n"+deny, 1) + budget + reloadTenants
	if l := h.reload(cfg); !strings.Contains(l, `"config reloaded"`) {
		t.Fatalf("adding an outbound deny list: %s", l)
	}
	st, m := h.do("operator", "POST", "/v1/vendors/vx", map[string]any{"mcp": map[string]any{"transport": "http", "url": "http://" + h.vaddr + "/places/mcp"}})
	if st != 403 || !strings.Contains(m["raw"].(string), "deny list") {
		t.Errorf("registering a vendor on a denied address: %d %v", st, m["raw"])
	}
	if st, m := h.call("globex", "maps__route", route, -1); st == 200 {
		t.Errorf("a call reached a vendor whose address the reload denied: %d %v", st, m["raw"])
	}
	if got := h.vendors[vendors.Maps].Counters().CallsTotal - calls; got != 0 {
		t.Errorf("the denied vendor received %d calls", got)
	}
}

// Issue 12, defect 18: the embedded budgets started from zero when toolhub
// restarted, so a tenant over its day budget could spend it again.
func TestBudgetsSurviveRestart(t *testing.T) {
	cfg := `addr: 127.0.0.1:0
outbound: {allow: ["{{addr}}"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    probe: {disabled: true}
tenants:
  - {id: default}
billing:
  prices:
    - version: "t1"
      effective: 2020-01-01T00:00:00Z
      entries:
        - {vendor: weather-a, tool: "*", tenant: {per_call: "0.001"}, payout: {per_call: "0.0005"}}
  budgets:
    - {tenant: default, period: day, limit: "0.002"}
    - {tenant: "*", vendor: weather-a, period: month, limit: "0.003"}
`
	h := startHub(t, cfg, nil, vendors.WeatherA)
	h.waitTools("", "weather-a__current_weather")
	city := map[string]any{"city": "Oslo"}
	for i := range 2 {
		if st, m := h.call("", "weather-a__current_weather", city, -1); st != 200 {
			t.Fatalf("call %d: %d %v", i, st, m["raw"])
		}
	}
	if _, m := h.call("", "weather-a__current_weather", city, -1); code(m) != "budget_exceeded" {
		t.Fatalf("a call past the day budget: %v", m["raw"])
	}
	calls := h.vendors[vendors.WeatherA].Counters().CallsTotal
	drilltest.Stop(t, h.proc)
	h.start()
	h.waitTools("", "weather-a__current_weather")
	if st, m := h.call("", "weather-a__current_weather", city, -1); code(m) != "budget_exceeded" {
		t.Errorf("after a restart, a call past the day budget: %d %v", st, m["raw"])
	}
	// The month budget was seeded too: with the day budget raised (a
	// reload), the month's 0.003 lets exactly one more call through.
	h.reload(strings.Replace(cfg, `limit: "0.002"`, `limit: "1"`, 1))
	if st, m := h.call("", "weather-a__current_weather", city, -1); st != 200 {
		t.Errorf("the month budget's last call: %d %v", st, m["raw"])
	}
	if st, m := h.call("", "weather-a__current_weather", city, -1); code(m) != "budget_exceeded" {
		t.Errorf("a call past the month budget after a restart: %d %v", st, m["raw"])
	}
	if got := h.vendors[vendors.WeatherA].Counters().CallsTotal - calls; got != 1 {
		t.Errorf("the vendor received %d calls after the restart, want 1", got)
	}
}

// Issue 28: a vendor key turning its own result_scan off would stop the hub
// marking its results as soon as it liked; like a dropped redaction rule,
// the change waits for an operator.
func TestVendorResultScanOffWaitsForApproval(t *testing.T) {
	h := startHub(t, selfServiceConfig, vendorKeys, vendors.WeatherA)
	spec := func(scan bool) map[string]any {
		return map[string]any{"mcp": map[string]any{"transport": "http", "url": "http://" + h.vaddr + "/weather-a/mcp"},
			"result_scan": scan, "probe": map[string]any{"disabled": true}}
	}
	if st, m := h.do("vx", "POST", "/v1/vendors/vx", spec(true)); st != 200 || m["status"] != "live" {
		t.Fatalf("register: %d %v", st, m["raw"])
	}
	st, m := h.do("vx", "PUT", "/v1/vendors/vx", spec(false))
	if st != 202 || m["status"] != "pending_approval" || !strings.Contains(fmt.Sprint(m["breaking"]), "result_scan turned off") {
		t.Errorf("vendor turning result_scan off: %d %v", st, m["raw"])
	}
	// Turning it on needs nobody.
	if st, m := h.do("operator", "POST", "/v1/admin/vendors/vx/reject", nil); st != 200 {
		t.Fatalf("reject: %d %v", st, m["raw"])
	}
	if st, m := h.do("vx", "PUT", "/v1/vendors/vx", spec(true)); st != 200 || m["status"] != "live" {
		t.Errorf("vendor keeping result_scan on: %d %v", st, m["raw"])
	}
}
