package ui_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
	"github.com/toolhub/toolhub/ui"
)

const actsConfig = `
auth: {enabled: true}
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    probe: {disabled: true}
  - id: maps
    mcp: {transport: http, url: "{{vendors}}/maps/mcp"}
    probe: {disabled: true}
capabilities:
  - name: maps.route
    input_schema: {type: object, required: [from, to], properties: {from: {type: string}, to: {type: string}}}
    chain:
      - tool: maps/route
tenants:
  - id: acme
billing:
  currency: USD
  budgets:
    - {tenant: acme, period: month, limit: "1.00"}
  prices:
    - version: "2026-01"
      effective: 2026-01-01T00:00:00Z
      entries:
        - {vendor: weather-a, tool: "*", tenant: {per_call: "0.001"}, payout: {per_call: "0.0005"}}
        - {vendor: maps, tool: "*", tenant: {per_call: "0.002"}, payout: {per_call: "0.001"}}
`

// TestDashboardActs drives the dashboard in Chromium against a hub with
// authentication on, as an operator would: without a key the page stops
// polling and asks for one; with the operator key it approves one pending
// vendor change and rejects another, pins and unpins a capability mode,
// lists the keys, shows the budget with its spend and each vendor's
// latency over time. Every action is checked on the hub itself.
func TestDashboardActs(t *testing.T) {
	bin := chromium(t)
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: actsConfig})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	keys, ids := map[string]string{}, map[string]string{}
	for name, k := range map[string]auth.Key{
		"operator": {Role: auth.RoleOperator, Name: "ops-desk"},
		"vx":       {Role: auth.RoleVendor, Vendor: "vx"},
		"vy":       {Role: auth.RoleVendor, Vendor: "vy"},
	} {
		tok, key, err := auth.Issue(t.Context(), l.App.Keys, k, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		keys[name], ids[name] = tok, key.ID
	}
	do := func(key, method, path string, body any) (int, string) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, l.HubURL+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+keys[key])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	// Two vendors register themselves, then make breaking changes (their
	// tool disappears): both wait for an operator.
	for _, v := range []string{"vx", "vy"} {
		if st, m := do(v, "POST", "/v1/vendors/"+v, map[string]any{"mcp": map[string]any{"transport": "http", "url": l.URL + "/weather-a/mcp"}}); st != 200 {
			t.Fatalf("register %s: %d %s", v, st, m)
		}
		if err := l.WaitReady(t.Context(), v); err != nil { // its tools listed, so the next change is compared with them
			t.Fatal(err)
		}
		if st, m := do(v, "PUT", "/v1/vendors/"+v, map[string]any{"mcp": map[string]any{"transport": "http", "url": l.URL + "/maps/mcp"}}); st != 202 {
			t.Fatalf("breaking change of %s: %d %s", v, st, m)
		}
	}
	// Traffic for the budget and the latency chart.
	if err := l.WaitReady(t.Context(), "weather-a"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := l.App.Gateway.Call(t.Context(), &hub.Call{Tenant: "acme", Name: "weather-a__current_weather", Arguments: map[string]any{"city": fmt.Sprint("C", i)}}); err != nil {
			t.Fatal(err)
		}
	}

	p := openPage(t, bin, l.HubURL+"/ui/")
	// No key: the page stops polling and asks for one.
	p.waitJS(t, "polling stopped on 401", `document.body.dataset.polling === "stopped" && !document.querySelector("#keyprompt").hidden`)
	if txt := p.eval(t, `document.querySelector("#keyprompt").textContent`); !strings.Contains(fmt.Sprint(txt), "enter an operator key") {
		t.Errorf("key prompt says %q", txt)
	}
	// The operator enters the key: polling resumes, the panels fill.
	p.eval(t, fmt.Sprintf(`document.querySelector("#key").value = %q; document.querySelector("#keyform").requestSubmit()`, keys["operator"]))
	p.waitJS(t, "polling on", `document.body.dataset.polling === "on" && document.querySelector("#keyprompt").hidden`)

	// Approve vx, reject vy.
	p.click(t, `[data-approve="vx"]`)
	p.waitJS(t, "vx's change leaves the list", `!document.querySelector('[data-pending="vx"]') && document.querySelector("#actionmsg").dataset.result === "ok"`)
	// The approved change reconnects vx in the background (servers.Manager.Update
	// waits for the old connection to retire, not for the new one's tool list).
	drilltest.WaitFor(t, 10*time.Second, "vx's approved change live", func() bool {
		_, ok := l.App.Catalog.VendorTool("vx", "route")
		return ok
	})
	p.click(t, `[data-reject="vy"]`)
	p.waitJS(t, "vy's change leaves the list", `!document.querySelector('[data-pending="vy"]') && document.querySelector("#actionmsg").textContent === "reject vy: done"`)
	if _, ok := l.App.Catalog.VendorTool("vy", "current_weather"); !ok {
		t.Errorf("vy's rejected change went live")
	}
	if _, ok := l.App.Catalog.VendorTool("vy", "route"); ok {
		t.Errorf("vy's rejected change went live")
	}

	// Pin maps.route degraded, then unpin it.
	p.eval(t, `const s = document.querySelector('[data-pin-select="maps.route"]'); s.value = "degraded"; s.dispatchEvent(new Event("change"))`)
	p.click(t, `[data-pin="maps.route"]`)
	waitUntil(t, 30*time.Second, "maps.route pinned", func() bool { return pinned(l, "maps.route") == fallback.Degraded })
	p.waitJS(t, "pinned shown", `document.querySelector('[data-capability="maps.route"]').dataset.mode === "degraded" && document.querySelector('[data-unpin="maps.route"]')`)
	p.click(t, `[data-unpin="maps.route"]`)
	waitUntil(t, 30*time.Second, "maps.route unpinned", func() bool { return pinned(l, "maps.route") == "" })

	// Keys, budget with spend, and weather-a's latency over time.
	p.waitJS(t, "the operator key listed", fmt.Sprintf(`document.querySelector('[data-key=%q][data-key-state="active"]')`, ids["operator"]))
	spent, err := l.App.Budgets.Spent(t.Context(), "acme", "", "month", time.Now())
	if err != nil || spent == 0 {
		t.Fatalf("acme's spend: %v, %v", spent, err)
	}
	p.waitJS(t, "acme's budget with its spend", fmt.Sprintf(`document.querySelector('[data-budget="acme/*/month"][data-spent=%q]')`, spent.String()))
	p.waitJS(t, "weather-a's latency line", `document.querySelector('#chart-latency [data-series-vendor="weather-a"]') && document.querySelector('#chart-errors [data-series-vendor="weather-a"]')`)
}

func pinned(l *drill.Lab, capability string) fallback.Mode {
	for _, s := range l.App.Modes.Status() {
		if s.Capability == capability {
			return s.Pinned
		}
	}
	return "none"
}

// TestDashboardReadyAndColours: the ready count leaves out ejected vendors
// and open breakers (a half-open breaker lets trial calls through, so it
// counts); a vendor keeps its colour when the set of vendors changes.
func TestDashboardReadyAndColours(t *testing.T) {
	bin := chromium(t)
	var mu sync.Mutex
	usage := `{"rows":[{"tenant":"acme","vendor":"maps","period":"2026-12-01","calls":3},{"tenant":"acme","vendor":"weather-a","period":"2026-12-01","calls":2}]}`
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.Handler(nil))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/vendors":
			io.WriteString(w, `{"vendors":[
				{"id":"a","state":"ready","governance":{"breaker":{"state":"closed"}}},
				{"id":"b","state":"ready","governance":{"breaker":{"state":"closed"},"ejected":true}},
				{"id":"c","state":"ready","governance":{"breaker":{"state":"open"}}},
				{"id":"d","state":"ready","governance":{"breaker":{"state":"half_open"}}},
				{"id":"e","state":"connecting","governance":{"breaker":{"state":"closed"}}}]}`)
		case "/v1/reports/usage":
			io.WriteString(w, usage)
		default:
			io.WriteString(w, `{}`)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dom := string(headless(t, bin, srv.URL+"/ui/", "--dump-dom"))
	if !strings.Contains(dom, `data-card="ready"><div class="n">2 / 5</div>`) {
		t.Errorf("ready card: want 2 / 5 (a and d)\n%s", tail(dom, 6000))
	}
	before := legendColour(t, dom, "maps")
	mu.Lock()
	usage = `{"rows":[{"tenant":"acme","vendor":"alpha","period":"2026-12-01","calls":1},{"tenant":"acme","vendor":"maps","period":"2026-12-01","calls":3},{"tenant":"acme","vendor":"zeta","period":"2026-12-02","calls":2}]}`
	mu.Unlock()
	dom = string(headless(t, bin, srv.URL+"/ui/", "--dump-dom"))
	if after := legendColour(t, dom, "maps"); after != before {
		t.Errorf("maps is %s with weather-a beside it and %s with alpha and zeta: want one colour", before, after)
	}
	if legendColour(t, dom, "alpha") == legendColour(t, dom, "maps") {
		t.Errorf("alpha and maps share a colour")
	}
}

func legendColour(t *testing.T, dom, vendor string) string {
	t.Helper()
	marker := `data-legend-vendor="` + vendor + `" data-color="`
	i := strings.Index(dom, marker)
	if i < 0 {
		t.Fatalf("no legend entry for %s", vendor)
	}
	rest := dom[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}
