// Package ui_test runs the dashboard end to end: a whole hub with the
// example vendors, some traffic, and headless Chromium rendering /ui/.
package ui_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/ui"
)

// labConfig: two weather vendors behind weather.current, maps behind
// maps.route, places with a fast probe, two tenants and a price book.
// weather-a's breaker cool-down is long so it stays open while Chromium
// looks.
const labConfig = `
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - id: weather-a
    name: Weather A
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    probe: {disabled: true}
  - id: weather-b
    name: Weather B
    mcp: {transport: http, url: "{{vendors}}/weather-b/mcp"}
    probe: {disabled: true}
  - id: maps
    mcp: {transport: http, url: "{{vendors}}/maps/mcp"}
    probe: {disabled: true}
  - id: places
    mcp: {transport: http, url: "{{vendors}}/places/mcp"}
    probe: {interval: 100ms}
capabilities:
  - name: weather.current
    input_schema: {type: object, required: [city], properties: {city: {type: string}}}
    chain:
      - tool: weather-a/current_weather
      - tool: weather-b/current_weather
        args: [{from: /city, to: /location}]
        result: [{from: /location, to: /city}, {from: /temperature, to: /temp_c}]
  - name: maps.route
    input_schema: {type: object, required: [from, to], properties: {from: {type: string}, to: {type: string}}}
    chain:
      - tool: maps/route
tenants:
  - id: acme
  - id: globex
governance:
  breaker: {cool_down: 5m, max_cool_down: 5m}
  retry: {max: 1, base: 1ms, cap: 2ms}
billing:
  currency: USD
  prices:
    - version: "2026-01"
      effective: 2026-01-01T00:00:00Z
      entries:
        - {vendor: weather-a, tool: "*", tenant: {per_call: "0.001"}, payout: {per_call: "0.0005"}}
        - {vendor: weather-b, tool: "*", tenant: {per_call: "0.001"}, payout: {per_call: "0.0004"}}
        - {vendor: maps, tool: "*", tenant: {per_call: "0.002"}, payout: {per_call: "0.001"}}
        - {vendor: places, tool: "*", tenant: {per_call: "0.002"}, payout: {per_call: "0.001"}}
`

// chromium finds the browser. Without it the test is skipped on a
// developer machine and fails in CI (env CI set): CI must run it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "/usr/bin/chromium"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const fix = "install it with scripts/chromium.sh (apt-get install -y chromium), or point CHROMIUM at a Chromium binary"
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is missing and CI is set, so the dashboard end-to-end test cannot be skipped: " + fix)
	}
	t.Skip("chromium is not installed; skipping the dashboard end-to-end test: " + fix)
	return ""
}

// headless runs Chromium on url with the given extra flags and returns its
// stdout.
func headless(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=5000", "--window-size=1400,1000",
	}, extra...)
	args = append(args, url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// newHub starts a lab hub whose decision log feeds a Recorder, and a front
// door that routes /ui/ to the dashboard and everything else to the API
// (as internal/app will once it mounts the dashboard).
func newHub(t *testing.T) (*drill.Lab, string) {
	t.Helper()
	rec := ui.NewRecorder(slog.NewJSONHandler(io.Discard, nil), 0)
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: labConfig, Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.Handler(&ui.Options{Recorder: rec}))
	mux.Handle("/", l.App.API)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return l, srv.URL
}

func call(t *testing.T, l *drill.Lab, tenant, name string, args map[string]any) {
	t.Helper()
	if _, err := l.App.Gateway.Call(t.Context(), &hub.Call{Tenant: tenant, Name: name, Arguments: args}); err != nil {
		t.Fatalf("%s calls %s: %v", tenant, name, err)
	}
}

func TestDashboard(t *testing.T) {
	bin := chromium(t)
	l, base := newHub(t)

	// Traffic: weather-a fails until its breaker opens and weather-b
	// answers instead; maps answers; then maps.route is pinned degraded.
	for range 3 {
		call(t, l, "acme", "weather.current", map[string]any{"city": "Paris"})
	}
	if err := l.SetMode("weather-a", drill.FaultFail); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		call(t, l, []string{"acme", "globex"}[i%2], "weather.current", map[string]any{"city": fmt.Sprint("City", i)})
	}
	for i := range 4 {
		call(t, l, []string{"globex", "acme"}[i%2], "maps.route", map[string]any{"from": "Paris", "to": "Lyon"})
	}
	call(t, l, "globex", "places__search_restaurants", map[string]any{"near": "Lyon"})
	if st := l.App.Gov.Status("weather-a").Breaker.State; st != "open" {
		t.Fatalf("weather-a's breaker is %s after its failures, want open", st)
	}
	if err := l.App.Modes.Pin("maps.route", fallback.Degraded); err != nil {
		t.Fatal(err)
	}
	if err := l.App.Meter.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	dom := string(headless(t, bin, base+"/ui/", "--dump-dom"))
	for _, want := range []string{
		`id="live" class="pill pill-live"`, // every panel loaded
		`data-vendor="weather-a" data-breaker="open"`,
		`data-vendor="weather-b" data-breaker="closed"`,
		`data-vendor="maps" data-breaker="closed"`,
		`data-vendor="places" data-breaker="closed"`,
		`data-capability="maps.route" data-mode="degraded"`,
		`data-capability="weather.current" data-mode=`,
		`data-tenant="acme" data-vendor="weather-b"`, // usage table
		`data-tenant="globex" data-vendor="maps"`,
		`<rect`,       // the charts
		`data-call="`, // decision log rows
		`>fallback<`,  // a decision that fell back
		`>places<`,    // ... and one that went straight to places
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered dashboard lacks %s", want)
		}
	}
	for _, bad := range []string{`data-state="error"`, `data-state="forbidden"`, "needs an operator"} {
		if strings.Contains(dom, bad) {
			t.Errorf("rendered dashboard shows %s", bad)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", tail(dom, 12000))
	}

	shot := filepath.Join(t.TempDir(), "dashboard.png")
	headless(t, bin, base+"/ui/", "--screenshot="+shot, "--hide-scrollbars")
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 20_000 {
		t.Fatalf("screenshot is not a plausible PNG (%d bytes)", len(png))
	}
	if os.Getenv("TOOLHUB_UPDATE_SCREENSHOT") == "1" {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote docs/dashboard.png")
	}
}

// TestDashboardWithoutKey: when the APIs refuse the page (401/403), it
// says which key it needs instead of showing empty tables as if fine.
func TestDashboardWithoutKey(t *testing.T) {
	bin := chromium(t)
	mux := http.NewServeMux()
	var mu sync.Mutex
	vendorFetches := 0
	mux.Handle("/ui/", ui.Handler(nil))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/vendors" {
			mu.Lock()
			vendorFetches++
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"code":"unauthenticated","message":"no API key"}}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dom := string(headless(t, bin, srv.URL+"/ui/", "--dump-dom"))
	for _, want := range []string{
		`class="panel failed" id="p-vendors" data-state="forbidden"`,
		`class="panel failed" id="p-capabilities" data-state="forbidden"`,
		`class="panel failed" id="p-usage" data-state="forbidden"`,
		"No data. 401: needs an operator or finance key",
		`id="live" class="pill pill-down" role="status">needs a key<`,
		`data-polling="stopped"`,                                       // a 401 stops the polling…
		"Updates are paused: enter an operator key above to continue.", // … and asks for a key
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered dashboard lacks %s", want)
		}
	}
	mu.Lock()
	if vendorFetches != 1 {
		t.Errorf("the page fetched /v1/vendors %d times in 5 s of virtual time after a 401; want once (polling stops)", vendorFetches)
	}
	mu.Unlock()
	// The decisions come from the ui handler itself (no recorder: empty)
	// and stay fine.
	if !strings.Contains(dom, `class="panel" id="p-decisions" data-state="ok"`) {
		t.Errorf("decisions panel not ok")
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", tail(dom, 8000))
	}
}

// TestDashboardStale: when a fetch fails after a good one, the page keeps
// the last data, marks the panel stale and says why.
func TestDashboardStale(t *testing.T) {
	bin := chromium(t)
	var mu sync.Mutex
	seen := map[string]int{}
	good := map[string]string{
		"/v1/vendors":       `{"vendors":[{"id":"vx","transport":"http","state":"ready","tools":2,"governance":{"breaker":{"state":"half_open"},"ramp":{"percent":25},"ejected":false,"usage":{"in_flight":1}}}]}`,
		"/v1/capabilities":  `{"capabilities":[{"capability":"image.generate","mode":"recovering","measured":"recovering","window":{"samples":3}}]}`,
		"/v1/reports/usage": `{"rows":[],"totals":[]}`,
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.Handler(nil))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		n := seen[r.URL.Path]
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n > 1 { // the first answer is good, the next ones fail
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":"unavailable","message":"hub restarting"}}`)
			return
		}
		io.WriteString(w, good[r.URL.Path])
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dom := string(headless(t, bin, srv.URL+"/ui/", "--dump-dom"))
	for _, want := range []string{
		`class="panel stale" id="p-vendors" data-state="error"`,
		`class="panel stale" id="p-capabilities" data-state="error"`,
		"Stale — showing data from",
		"503: hub restarting",
		`data-vendor="vx" data-breaker="half_open"`, // the last good data stays
		`data-capability="image.generate" data-mode="recovering"`,
		`id="live" class="pill pill-stale" role="status">partly stale<`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered dashboard lacks %s", want)
		}
	}
	mu.Lock()
	if seen["/v1/vendors"] < 2 {
		t.Errorf("the page fetched /v1/vendors %d times in 5 s of virtual time; want a refresh every 2 s", seen["/v1/vendors"])
	}
	mu.Unlock()
	if t.Failed() {
		t.Logf("DOM:\n%s", tail(dom, 8000))
	}
}
