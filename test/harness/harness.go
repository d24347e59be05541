// Package harness starts what the end-to-end tests run against: the
// example vendors on a loopback port, and real toolhub processes (the
// binary drilltest.Run builds) with a config file, killed when the test
// ends, their log's tail reported when it failed; or a toolhub inside the
// test process (StartInProcess), for the tests that also look into it.
//
//	addr, vs := harness.ServeVendors(t, harness.OwnGates(gates), vendors.WeatherA, vendors.Doubao)
//	cfg := harness.WriteConfig(t, config, "{{addr}}", addr)
//	h := harness.StartHub(t, bin, harness.Hub{Config: cfg, Ready: []string{"weather-a"}})
//	status, body, err := harness.CallTool(h.URL(), "weather-a__get_weather", args)
//
//	in := harness.StartInProcess(t, harness.ParseConfig(t, config, "{{addr}}", addr), nil, "weather-a")
//	st := in.Manager.Status("weather-a") // in.URL serves the HTTP surface
package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

// ServeVendors serves the named example vendors on one loopback port,
// each vendor's calls held by the gate gateOf returns for it (nil: a gate
// of its own each); the gates are opened and the vendors closed when the
// test ends.
func ServeVendors(t testing.TB, gateOf func(name string) *drill.Gate, names ...string) (addr string, vs map[string]*vendors.Vendor) {
	t.Helper()
	if gateOf == nil {
		gateOf = OwnGates(map[string]*drill.Gate{})
	}
	opts, gates := map[string]*vendors.Options{}, map[*drill.Gate]bool{}
	for _, n := range names {
		g := gateOf(n)
		opts[n], gates[g] = &vendors.Options{Sleep: g.Sleep}, true
	}
	vs, addr, closeVendors, err := vendors.ServeVendors(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for g := range gates {
			g.Open()
		}
		closeVendors()
	})
	return addr, vs
}

// OwnGates gives each vendor a gate of its own, recorded in gates.
func OwnGates(gates map[string]*drill.Gate) func(string) *drill.Gate {
	return func(name string) *drill.Gate {
		g := &drill.Gate{}
		gates[name] = g
		return g
	}
}

// SetKnobs sets a vendor's knobs, failing the test on a bad one.
func SetKnobs(t testing.TB, v *vendors.Vendor, k vendors.Knobs) {
	t.Helper()
	if err := v.SetKnobs(k); err != nil {
		t.Fatal(err)
	}
}

// WriteConfig writes cfg, with each old/new pair of replace replaced, to a
// toolhub.yaml in a new temporary folder, and returns its path.
func WriteConfig(t testing.TB, cfg string, replace ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolhub.yaml")
	if err := os.WriteFile(path, []byte(strings.NewReplacer(replace...).Replace(cfg)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Hub says how to start one toolhub process.
type Hub struct {
	Config string // the config file (WriteConfig)
	Data   string // the data folder; "" means a new temporary one
	Name   string // names the process in messages; "" means "toolhub"
	// Ready names the vendors Await waits for.
	Ready []string
	// Wait bounds the wait for listening, and for each vendor; zero means
	// 60 s.
	Wait time.Duration
	// Log is what of the process's log a failed test shows; nil means its
	// last 40 lines.
	Log func(*drill.Process) string
}

// Launch starts toolhub (bin) as h says, without waiting for it; it is
// killed when the test ends. Launching several before awaiting any starts
// them in parallel.
func Launch(t testing.TB, bin string, h Hub) *drill.Process {
	t.Helper()
	if h.Data == "" {
		h.Data = t.TempDir()
	}
	p, err := drill.StartProcess(drill.ProcessOptions{Binary: bin, Config: h.Config, Data: h.Data, Name: h.Name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s log:\n%s", orName(h.Name), logOf(h, p))
		}
	})
	return p
}

// Await waits until p listens and the vendors h.Ready names are ready.
func Await(t testing.TB, p *drill.Process, h Hub) {
	t.Helper()
	wait := h.Wait
	if wait <= 0 {
		wait = 60 * time.Second
	}
	if _, err := p.WaitListening(t.Context(), wait); err != nil {
		t.Fatalf("%s: %v\n%s", orName(h.Name), err, logOf(h, p))
	}
	for _, v := range h.Ready {
		drilltest.WaitFor(t, wait, orName(h.Name)+": vendor "+v+" ready", func() bool { return p.VendorsReady(t.Context(), v) })
	}
}

// StartHub is Launch, then Await.
func StartHub(t testing.TB, bin string, h Hub) *drill.Process {
	t.Helper()
	p := Launch(t, bin, h)
	Await(t, p, h)
	return p
}

func orName(n string) string {
	if n == "" {
		return "toolhub"
	}
	return n
}

func logOf(h Hub, p *drill.Process) string {
	if h.Log != nil {
		return h.Log(p)
	}
	return p.Tail(40)
}

// Client is the HTTP client of PostJSON and CallTool.
var Client = &http.Client{Timeout: 60 * time.Second}

// PostJSON posts body as JSON to url and decodes the JSON answer.
func PostJSON(url string, body any) (status int, out map[string]any, err error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	resp, err := Client.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("POST %s: %s: %q", url, resp.Status, raw)
	}
	return resp.StatusCode, out, nil
}

// CallTool calls a tool over REST (POST base/v1/tools/{tool}/call).
func CallTool(base, tool string, args map[string]any) (status int, body map[string]any, err error) {
	return PostJSON(base+"/v1/tools/"+tool+"/call", map[string]any{"arguments": args})
}
