// Package crash kills a real toolhub process with SIGKILL mid-load and
// checks that nothing is lost or double counted: every vendor attempt is in
// the ledger once (ok, or unknown when toolhub died before the answer), and
// every job completes exactly once at the vendor.
//
// The example vendors run in the test process, so their counters survive
// the kill; toolhub runs as a child process built in TestMain.
package crash

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/sqlledger"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
	"github.com/toolhub/toolhub/test/harness"
)

var toolhubBin string

func TestMain(m *testing.M) {
	os.Exit(drilltest.Run(m, "../..", &toolhubBin))
}

// serveVendors serves the named example vendors on a loopback port, each
// held by g.
func serveVendors(t *testing.T, g *drill.Gate, names ...string) (addr string, vs map[string]*vendors.Vendor) {
	t.Helper()
	return harness.ServeVendors(t, func(string) *drill.Gate { return g }, names...)
}

const config = `addr: 127.0.0.1:0
log_level: info
timeout: 30s
governance:
  retry: {max: 0}
  breaker: {min_calls: 1000000, consecutive_failures: 1000000}
outbound:
  allow: ["{{addr}}"]
jobs: {workers: 8, max_attempts: 1000, lease: 3s}
fallback:
  degradation: {min_samples: 1000000}
  capabilities:
    image.generate: {queue: true}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "http://{{addr}}/weather-a/mcp"}
  - id: doubao
    mcp: {transport: http, url: "http://{{addr}}/doubao/mcp"}
  - id: sd
    mcp: {transport: http, url: "http://{{addr}}/sd/mcp"}
capabilities:
  - name: image.generate
    description: doubao, then sd, then a durable job.
    input_schema:
      type: object
      required: [prompt]
      properties:
        prompt: {type: string, minLength: 1}
    chain:
      - tool: doubao/generate_image
      - tool: sd/txt2img
        args: [{from: /prompt, to: /text}]
`

// startHub starts toolhub on data with cfgPath and waits until it listens
// and the vendors are ready.
func startHub(t *testing.T, cfgPath, data string, ready ...string) *drill.Process {
	t.Helper()
	return harness.StartHub(t, toolhubBin, harness.Hub{Config: cfgPath, Data: data, Ready: ready, Wait: 30 * time.Second})
}

// callTool calls a tool over REST and decodes the answer.
func callTool(url, tool string, args map[string]any) (status int, body map[string]any, err error) {
	return harness.CallTool(url, tool, args)
}

func writeConfig(t *testing.T, addr string) (cfgPath, data string) {
	t.Helper()
	return harness.WriteConfig(t, config, "{{addr}}", addr), filepath.Join(t.TempDir(), "data")
}

// TestKillMidLoadLedger drives concurrent calls to weather-a, holds them
// at the vendor, kills toolhub, restarts it on the same data folder and
// checks the ledger: one attempt event per call the vendor received, no
// duplicates, and the calls toolhub never heard back from as unknown.
func TestKillMidLoadLedger(t *testing.T) {
	g := &drill.Gate{Cancelable: true}
	addr, vs := serveVendors(t, g, vendors.WeatherA, vendors.Doubao, vendors.SD)
	wa := vs[vendors.WeatherA]
	harness.SetKnobs(t, wa, vendors.Knobs{Latency: time.Millisecond}) // every call passes the gate
	cfgPath, data := writeConfig(t, addr)
	h := startHub(t, cfgPath, data, vendors.WeatherA)

	const workers = 16
	var wg sync.WaitGroup
	var answered atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				status, _, err := callTool(h.URL(), "weather-a__current_weather", map[string]any{"city": fmt.Sprintf("city-%d-%d", w, i)})
				if err != nil {
					return // toolhub is gone
				}
				if status == http.StatusOK {
					answered.Add(1)
				}
			}
		}()
	}
	// Let load run, then hold every worker's call at the vendor and kill
	// toolhub with all of them in flight.
	drilltest.WaitFor(t, 20*time.Second, "300 calls at weather-a", func() bool { return wa.Counters().CallsTotal >= 300 })
	g.Close()
	drilltest.WaitFor(t, 20*time.Second, "every worker's call held at weather-a", func() bool { return wa.Counters().InFlight == workers })
	h.Kill()
	g.Open()
	wg.Wait()
	drilltest.WaitFor(t, 10*time.Second, "weather-a idle", func() bool { return wa.Counters().InFlight == 0 })
	calls := wa.Counters().CallsTotal
	t.Logf("weather-a received %d calls; %d answered before the kill", calls, answered.Load())

	// The restart hands the WAL to the ledger before it listens; a graceful
	// stop then closes the ledger.
	h2 := startHub(t, cfgPath, data)
	drilltest.Stop(t, h2)
	for _, line := range strings.Split(h2.Logs(), "\n") {
		if strings.Contains(line, "write-ahead log recovered") {
			t.Logf("restart: %s", line)
		}
	}

	l, err := sqlledger.Open(context.Background(), filepath.Join(data, "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keys := map[string]bool{}
	callIDs := map[string]bool{}
	outcomes := map[billing.Outcome]int64{}
	var attempts int64
	err = l.Query(context.Background(), billing.Filter{Vendor: vendors.WeatherA, Kind: billing.KindAttempt}, func(e billing.Event) error {
		attempts++
		outcomes[e.Outcome]++
		if keys[e.Key] {
			t.Errorf("key %s twice in the ledger", e.Key)
		}
		keys[e.Key] = true
		callIDs[e.CallID] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ledger: %d weather-a attempt events %v, %d distinct calls", attempts, outcomes, len(callIDs))
	if attempts != calls {
		t.Errorf("ledger has %d weather-a attempts, the vendor received %d calls", attempts, calls)
	}
	if outcomes[billing.OutcomeOK]+outcomes[billing.OutcomeUnknown] != attempts {
		t.Errorf("outcomes %v: want only ok and unknown", outcomes)
	}
	if int64(len(callIDs)) != attempts {
		t.Errorf("%d distinct call ids for %d attempts (retries are off: want one attempt per call)", len(callIDs), attempts)
	}
	if outcomes[billing.OutcomeUnknown] != workers {
		t.Errorf("%d unknown attempts, want %d (the calls held at the vendor when toolhub died)", outcomes[billing.OutcomeUnknown], workers)
	}
}

// TestKillWhileJobsRunJobsCompleteOnce queues image jobs while both image
// vendors fail, heals the primary, kills toolhub while the jobs are at the vendor
// (which then completes them: toolhub never hears), restarts it and waits
// until every job succeeded: each completed exactly once at the vendor.
func TestKillWhileJobsRunJobsCompleteOnce(t *testing.T) {
	g := &drill.Gate{}
	addr, vs := serveVendors(t, g, vendors.WeatherA, vendors.Doubao, vendors.SD)
	doubao, sd := vs[vendors.Doubao], vs[vendors.SD]
	harness.SetKnobs(t, doubao, vendors.Knobs{Mode: vendors.ModeFail})
	harness.SetKnobs(t, sd, vendors.Knobs{Mode: vendors.ModeFail})
	cfgPath, data := writeConfig(t, addr)
	h := startHub(t, cfgPath, data, vendors.Doubao, vendors.SD)

	const n = 6
	var ids []string
	for i := range n {
		status, body, err := callTool(h.URL(), "image.generate", map[string]any{"prompt": fmt.Sprintf("a crash test %d", i)})
		if err != nil || status != http.StatusOK {
			t.Fatalf("image.generate: %d %v %v", status, body, err)
		}
		p, _ := body["provenance"].(map[string]any)
		id, _ := p["job_id"].(string)
		if q, _ := p["queued"].(bool); !q || id == "" {
			t.Fatalf("image.generate with both vendors failing was not queued: %v", body)
		}
		ids = append(ids, id)
	}
	// Heal doubao with its calls held at the gate (sd keeps failing, with no
	// latency, so it never holds a call: a job that completed at sd before
	// the kill would run again at doubao, and idempotency keys are per
	// vendor — see the report).
	g.Close()
	harness.SetKnobs(t, doubao, vendors.Knobs{Latency: time.Millisecond})
	drilltest.WaitFor(t, 30*time.Second, "every job running at doubao", func() bool { return doubao.Counters().InFlight == n })
	h.Kill()
	g.Open() // the vendor finishes the jobs; toolhub is not there to hear it
	drilltest.WaitFor(t, 10*time.Second, "doubao idle", func() bool { return doubao.Counters().InFlight == 0 })
	if c := doubao.Counters(); c.UniqueCompleted != n {
		t.Fatalf("doubao completed %d jobs before the restart, want %d: %+v", c.UniqueCompleted, n, c)
	}

	// Restarted, toolhub claims the jobs again once the dead workers'
	// leases expire (30s) and runs them: the vendor answers from its
	// idempotency keys.
	h2 := startHub(t, cfgPath, data, vendors.Doubao, vendors.SD)
	for _, id := range ids {
		drilltest.WaitFor(t, 50*time.Second, "job "+id+" succeeded", func() bool {
			return drill.JobSucceeded(t.Context(), h2.URL(), id)
		})
	}
	drilltest.Stop(t, h2)
	dc, sc := doubao.Counters(), sd.Counters()
	t.Logf("doubao %+v; sd %+v", dc, sc)
	if got := dc.UniqueCompleted + sc.UniqueCompleted; got != n {
		t.Errorf("jobs completed at the vendors: %d, want %d (exactly once each)", got, n)
	}
	if dc.Replayed < n {
		t.Errorf("doubao answered %d repeated keys, want at least %d (each job ran again after the kill)", dc.Replayed, n)
	}

	// The ledger pays doubao once per job: the attempts toolhub never heard
	// back from are unknown (no payout), the re-runs ok.
	outcomes, err := attemptOutcomes(filepath.Join(data, "ledger.db"), vendors.Doubao)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ledger: doubao attempts %v", outcomes)
	var attempts int64
	for _, c := range outcomes {
		attempts += c
	}
	if attempts != dc.CallsTotal {
		t.Errorf("ledger has %d doubao attempts, doubao received %d calls", attempts, dc.CallsTotal)
	}
	if outcomes[billing.OutcomeOK] != n || outcomes[billing.OutcomeUnknown] != n {
		t.Errorf("doubao attempts %v; want %d ok (the re-runs) and %d unknown (held when toolhub died)", outcomes, n, n)
	}
}

func attemptOutcomes(path, vendor string) (map[billing.Outcome]int64, error) {
	l, err := sqlledger.Open(context.Background(), path, nil)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	out := map[billing.Outcome]int64{}
	err = l.Query(context.Background(), billing.Filter{Vendor: vendor, Kind: billing.KindAttempt}, func(e billing.Event) error {
		out[e.Outcome]++
		return nil
	})
	return out, err
}

// TestKillAtRateLedger offers ~5,000 calls/s to weather-a (64 paced
// clients), kills toolhub with SIGKILL in the middle of it — calls at the
// vendor, in the write-ahead log's pending batch and in its write — and
// restarts it on the same data folder: every attempt the vendor received
// is in the ledger once (plus, as unknown, any the kill stopped between
// its intent and the vendor), and every call a client got an answer for has
// its call event (an answered call is never lost; a call answered by the
// hub whose answer the kill cut off may be there too).
func TestKillAtRateLedger(t *testing.T) {
	for _, sync := range []string{"batch", "always"} {
		t.Run("sync "+sync, func(t *testing.T) { killAtRate(t, sync) })
	}
}

func killAtRate(t *testing.T, syncPolicy string) {
	addr, vs := serveVendors(t, &drill.Gate{}, vendors.WeatherA, vendors.Doubao, vendors.SD)
	wa := vs[vendors.WeatherA]
	cfgPath, data := writeConfig(t, addr)
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, append(cfg, "meter: {sync: "+syncPolicy+"}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, cfgPath, data, vendors.WeatherA)

	const workers, rate = 64, 5000
	period := time.Second * workers / rate // each client's pace
	var wg sync.WaitGroup
	var answered atomic.Int64
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			next := start.Add(period * time.Duration(w) / workers)
			for i := 0; ; i++ {
				time.Sleep(time.Until(next))
				next = next.Add(period)
				status, _, err := callTool(h.URL(), "weather-a__current_weather", map[string]any{"city": fmt.Sprintf("city-%d-%d", w, i)})
				if err != nil {
					return // toolhub is gone
				}
				if status == http.StatusOK {
					answered.Add(1)
				}
			}
		})
	}
	drilltest.WaitFor(t, 30*time.Second, "5000 calls at weather-a", func() bool { return wa.Counters().CallsTotal >= 5000 })
	h.Kill()
	elapsed := time.Since(start)
	wg.Wait()
	drilltest.WaitFor(t, 10*time.Second, "weather-a idle", func() bool { return wa.Counters().InFlight == 0 })
	calls := wa.Counters().CallsTotal
	t.Logf("weather-a received %d calls in %v (%.0f/s offered %d/s); %d answered before the kill",
		calls, elapsed.Round(time.Millisecond), float64(calls)/elapsed.Seconds(), rate, answered.Load())

	h2 := startHub(t, cfgPath, data)
	drilltest.Stop(t, h2)
	l, err := sqlledger.Open(context.Background(), filepath.Join(data, "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keys := map[string]bool{}
	var attempts, okCalls int64
	outcomes := map[billing.Outcome]int64{}
	err = l.Query(context.Background(), billing.Filter{Vendor: vendors.WeatherA}, func(e billing.Event) error {
		if keys[e.Key] {
			t.Errorf("key %s twice in the ledger", e.Key)
		}
		keys[e.Key] = true
		switch {
		case e.Kind == billing.KindAttempt:
			attempts++
			outcomes[e.Outcome]++
		case e.Kind == billing.KindCall && e.Outcome == billing.OutcomeOK:
			okCalls++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ledger: %d weather-a attempts %v, %d ok call events", attempts, outcomes, okCalls)
	// Unlike TestKillMidLoadLedger's, this kill may fall between an
	// attempt's intent and its request reaching the vendor: such an
	// attempt is unknown too, so unknown attempts may outnumber the calls
	// the vendor never answered, never the other way round.
	if attempts < calls || attempts-calls > outcomes[billing.OutcomeUnknown] || outcomes[billing.OutcomeOK] > calls {
		t.Errorf("ledger has %d weather-a attempts %v, the vendor received %d calls: want every call once, any surplus unknown", attempts, outcomes, calls)
	}
	if okCalls < answered.Load() {
		t.Errorf("ledger has %d ok call events, clients got %d answers: answered calls lost", okCalls, answered.Load())
	}
	if okCalls > outcomes[billing.OutcomeOK] {
		t.Errorf("%d ok call events for %d ok attempts", okCalls, outcomes[billing.OutcomeOK])
	}
}
