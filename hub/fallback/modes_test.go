package fallback_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhub/toolhub/hub/fallback"
)

func newModes(t *testing.T) (*fallback.Modes, *clock, *[]fallback.Change, *prometheus.Registry) {
	clk := newClock()
	var changes []fallback.Change
	reg := prometheus.NewRegistry()
	m := fallback.NewModes(&fallback.ModesOptions{Config: testConfig, Now: clk.Now, Registerer: reg, OnChange: func(c fallback.Change) { changes = append(changes, c) }})
	return m, clk, &changes, reg
}

// tick records n outcomes at the current time, then advances the clock by d.
func tick(m *fallback.Modes, clk *clock, o fallback.Outcome, n int, d time.Duration) {
	for range n {
		m.Record("weather.current", o)
	}
	clk.Advance(d)
}

var (
	fail    = fallback.Outcome{Failed: true, Latency: 10 * time.Millisecond}
	timeout = fallback.Outcome{Failed: true, Timeout: true, Latency: time.Second}
	good    = fallback.Outcome{Latency: 10 * time.Millisecond}
)

func TestDegradationTransitions(t *testing.T) {
	m, clk, changes, _ := newModes(t)
	const c = "weather.current"
	mode := func() fallback.Mode { return m.Mode(c) }
	// Defaults: alert after 10 s, degrade after 30 s, probe after 60 s,
	// recover after 120 s; 10 samples minimum.
	tick(m, clk, fail, 10, time.Second) // t=0: enough samples to judge; failing since t=0
	for range 9 {                       // t=1…9: the threshold has not held 10 s
		tick(m, clk, fail, 1, 0)
		if got := mode(); got != fallback.Normal {
			t.Fatalf("%v: %s, want normal (threshold not held)", clk.Now(), got)
		}
		clk.Advance(time.Second)
	}
	tick(m, clk, fail, 1, 0) // t=10
	if mode() != fallback.Alert {
		t.Fatalf("after 10 s of failures: %s, want alert", mode())
	}
	for range 19 { // t=11…29
		clk.Advance(time.Second)
		tick(m, clk, fail, 1, 0)
	}
	if mode() != fallback.Alert {
		t.Fatalf("t=29s: %s, want alert (degrade not held 30 s)", mode())
	}
	clk.Advance(time.Second)
	tick(m, clk, fail, 1, 0) // t=30
	if mode() != fallback.Degraded {
		t.Fatalf("after 30 s of failures: %s, want degraded", mode())
	}
	// Degraded: the primary gets no traffic; after ProbeAfter it is probed.
	clk.Advance(59 * time.Second)
	if mode() != fallback.Degraded {
		t.Fatalf("%s, want degraded until probe_after", mode())
	}
	clk.Advance(time.Second)
	if mode() != fallback.Recovering {
		t.Fatalf("%s, want recovering", mode())
	}
	// Recovering, still bad: straight back to degraded once judged.
	tick(m, clk, timeout, 10, 0)
	if mode() != fallback.Degraded {
		t.Fatalf("%s, want degraded again", mode())
	}
	clk.Advance(time.Minute)
	if mode() != fallback.Recovering {
		t.Fatalf("%s, want recovering", mode())
	}
	// Recovering and healthy: normal only after 120 s of good windows,
	// four times the 30 s that degradation needed.
	for range 119 {
		tick(m, clk, good, 10, time.Second)
		if mode() != fallback.Recovering {
			t.Fatalf("%s, want recovering until recover_hold", mode())
		}
	}
	tick(m, clk, good, 10, time.Second)
	if mode() != fallback.Normal {
		t.Fatalf("%s, want normal after 120 s healthy", mode())
	}
	var path []string
	for _, ch := range *changes {
		path = append(path, string(ch.To))
	}
	if got, want := strings.Join(path, ">"), "alert>degraded>recovering>degraded>recovering>normal"; got != want {
		t.Fatalf("transitions %s, want %s", got, want)
	}
	th := m.Thresholds(c)
	if th.RecoverHold <= th.DegradeHold {
		t.Fatal("recovery must be slower than degradation")
	}
}

func TestBlipDoesNotAlert(t *testing.T) {
	m, clk, changes, _ := newModes(t)
	tick(m, clk, fail, 10, 0) // a burst of failures…
	tick(m, clk, good, 50, time.Second)
	for range 60 { // …drowned by successes before the hold time
		tick(m, clk, good, 1, time.Second)
	}
	if got := m.Mode("weather.current"); got != fallback.Normal || len(*changes) != 0 {
		t.Fatalf("mode %s, changes %v", got, *changes)
	}
	// Too few samples are never judged.
	m, clk, _, _ = newModes(t)
	for range 60 {
		tick(m, clk, fail, 1, 10*time.Second) // one sample per 10 s bucket: 6 in the window
	}
	if got := m.Mode("weather.current"); got != fallback.Normal {
		t.Fatalf("judged on too few samples: %s", got)
	}
}

func TestLatencyAndAlertRecovery(t *testing.T) {
	clk := newClock()
	cfg := fallback.Config{Degradation: fallback.Thresholds{AlertLatency: registryDuration(500 * time.Millisecond)}}
	m := fallback.NewModes(&fallback.ModesOptions{Config: cfg, Now: clk.Now})
	slow := fallback.Outcome{Latency: time.Second}
	for range 15 { // judged from t=4 s (10 samples), held 10 s at t=14 s
		tick(m, clk, slow, 2, time.Second)
	}
	if got := m.Mode("weather.current"); got != fallback.Alert {
		t.Fatalf("slow primary: %s, want alert", got)
	}
	// Slow is not severe: it stays in Alert, then recovers after 120 s of
	// fast answers (the slow samples age out of the 60 s window first).
	for range 300 {
		tick(m, clk, good, 2, time.Second)
	}
	if got := m.Mode("weather.current"); got != fallback.Normal {
		t.Fatalf("fast again: %s, want normal", got)
	}
}

func TestStatusAndGauge(t *testing.T) {
	m, _, _, reg := newModes(t)
	_ = m.Pin("weather.canary", fallback.Degraded)
	_ = m.SwitchOff("weather.queued")
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Capabilities []fallback.Status `json:"capabilities"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	got := map[string]fallback.Status{}
	for _, s := range body.Capabilities {
		got[s.Capability] = s
	}
	if len(got) != len(testConfig.Capabilities) {
		t.Fatalf("status lists %d capabilities, want %d", len(got), len(testConfig.Capabilities))
	}
	if s := got["weather.canary"]; s.Mode != fallback.Degraded || s.Pinned != fallback.Degraded || s.Measured != fallback.Normal || s.Policy != fallback.Weighted {
		t.Errorf("canary status %+v", s)
	}
	if s := got["weather.queued"]; s.Mode != fallback.Off || !s.Off {
		t.Errorf("queued status %+v", s)
	}
	if s := got["weather.current"]; s.Mode != fallback.Normal || !s.Core {
		t.Errorf("current status %+v", s)
	}
	mfs, _ := reg.Gather()
	values := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "toolhub_capability_mode" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			values[mt.GetLabel()[0].GetValue()] = mt.GetGauge().GetValue()
		}
	}
	if values["weather.canary"] != 2 || values["weather.queued"] != 4 || values["weather.current"] != 0 {
		t.Errorf("gauge = %v", values)
	}
}

func TestAdminHandler(t *testing.T) {
	m, _, _, _ := newModes(t)
	mux := http.NewServeMux()
	mux.Handle("POST /v1/admin/capabilities/{name}/mode", m.AdminHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(name, body string) int {
		res, err := http.Post(srv.URL+"/v1/admin/capabilities/"+name+"/mode", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post("weather.cheap", `{"mode":"degraded"}`); code != 200 || m.Mode("weather.cheap") != fallback.Degraded {
		t.Fatalf("pin: %d %s", code, m.Mode("weather.cheap"))
	}
	if code := post("weather.current", `{"mode":"off"}`); code != http.StatusConflict {
		t.Fatalf("switching off core: %d", code)
	}
	if code := post("weather.cheap", `{"mode":""}`); code != 200 || m.Mode("weather.cheap") != fallback.Normal {
		t.Fatalf("unpin: %d %s", code, m.Mode("weather.cheap"))
	}
	if code := post("weather.cheap", `nope`); code != 400 {
		t.Fatalf("bad body: %d", code)
	}
}
