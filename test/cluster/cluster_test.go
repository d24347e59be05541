// Package cluster runs three real `toolhub serve` processes on one Redis
// and one PostgreSQL schema behind a round-robin load balancer with no
// session affinity, and checks that they behave as one hub: an MCP session
// works whichever instance each request lands on, a vendor registered on
// one instance is callable on another, a global rate limit holds across
// the three, and when one instance is killed mid-load no job is lost and
// the ledger matches what the vendors did, exactly.
//
// The example vendors run in the test process, so their counters survive
// the kill; toolhub is built in TestMain and runs as child processes.
package cluster

import (
	"context"
	"fmt"
	"github.com/toolhub/toolhub/internal/x/pgtest"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/pgledger"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
	"github.com/toolhub/toolhub/internal/x/redistest"
	"github.com/toolhub/toolhub/test/harness"
)

// The limited vendor: one global limit for the three instances.
const (
	limitRate  = 100.0
	limitBurst = 50
	limitSecs  = 3
)

const config = `addr: 127.0.0.1:0
log_level: info
timeout: 30s
redis: "redis://{{redis}}/0"
redis_prefix: "{{prefix}}"
postgres: "{{postgres}}"
postgres_schema: {{schema}}
instances: 3
governance:
  retry: {max: 0}
  breaker: {min_calls: 1000000, consecutive_failures: 1000000}
outbound:
  allow: ["{{vendors}}"]
jobs: {workers: 4, max_attempts: 1000, lease: 2s}
fallback:
  degradation: {min_samples: 1000000}
  capabilities:
    image.generate: {queue: true}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "http://{{vendors}}/weather-a/mcp"}
    probe: {disabled: true}
  - id: doubao
    mcp: {transport: http, url: "http://{{vendors}}/doubao/mcp"}
    probe: {disabled: true}
  - id: sd
    mcp: {transport: http, url: "http://{{vendors}}/sd/mcp"}
    probe: {disabled: true}
  - id: metered
    mcp: {transport: http, url: "http://{{vendors}}/weather-b/mcp"}
    limits: {rps: {{rate}}, burst: {{burst}}}
    probe: {disabled: true}
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

var static = []string{vendors.WeatherA, vendors.Doubao, vendors.SD, "metered"}

// trio is three toolhub processes behind a balancer.
type trio struct {
	cfgPath string
	data    [3]string
	hubs    [3]*drill.Process
	bal     *balancer
	schema  string
	vendors map[string]*vendors.Vendor
	gates   map[string]*drill.Gate
	vaddr   string
}

func startTrio(t *testing.T) *trio {
	t.Helper()
	tr := &trio{schema: pgtest.Schema(t)}
	tr.vaddr, tr.vendors, tr.gates = serveVendors(t, vendors.WeatherA, vendors.Maps, vendors.Doubao, vendors.SD, vendors.WeatherB)
	prefix := redistest.Prefix(t, redistest.Client(t))
	dir := t.TempDir()
	tr.cfgPath = filepath.Join(dir, "toolhub.yaml")
	cfg := strings.NewReplacer("{{redis}}", redistest.Addr(), "{{prefix}}", prefix, "{{postgres}}", pgtest.DSN(t),
		"{{schema}}", tr.schema, "{{vendors}}", tr.vaddr,
		"{{rate}}", fmt.Sprint(limitRate), "{{burst}}", fmt.Sprint(limitBurst)).Replace(config)
	if err := os.WriteFile(tr.cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range tr.hubs {
		tr.data[i] = filepath.Join(dir, fmt.Sprintf("data-%d", i+1))
		tr.hubs[i] = launchHub(t, fmt.Sprintf("instance %d", i+1), tr.cfgPath, tr.data[i])
	}
	for _, h := range tr.hubs {
		await(t, h, static...)
	}
	tr.bal = newBalancer(t, tr.hubs[:])
	return tr
}

// TestThreeInstances is issue 9's test: three instances, one Redis, one
// PostgreSQL, a load balancer with no affinity in front.
func TestThreeInstances(t *testing.T) {
	tr := startTrio(t)
	// The steps share the trio and run in order; each stops the test when
	// it fails, as the later ones build on it.
	for _, step := range []struct {
		name string
		run  func(*testing.T, *trio)
	}{
		{"MCPSessionWithoutAffinity", mcpWithoutAffinity},
		{"RegistrationPropagates", registrationPropagates},
		{"GlobalLimit", globalLimit},
		{"KillOneMidLoad", killOneMidLoad},
	} {
		if !t.Run(step.name, func(t *testing.T) { step.run(t, tr) }) {
			t.FailNow()
		}
	}
}

// mcpWithoutAffinity runs MCP sessions through the balancer: every request
// of a session lands on a different instance than the one before, and the
// session works, in the stateless protocol revision and in the older
// initialize handshake (whose Mcp-Session-Id one instance issues and the
// others must accept).
func mcpWithoutAffinity(t *testing.T, tr *trio) {
	for _, c := range []struct {
		name string
		opts []client.ClientOption
	}{
		{"latest", nil},
		{"2025-11-25", []client.ClientOption{client.WithProtocolVersion("2025-11-25")}},
		{"2025-03-26", []client.ClientOption{client.WithProtocolVersion("2025-03-26")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			tr.bal.startTrace()
			tp, err := transport.NewStreamableHTTP(tr.bal.url + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			cl := client.NewClient(tp, c.opts...)
			if err := cl.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init, err := cl.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
				ClientInfo: mcp.Implementation{Name: "cluster-test", Version: "1"}}})
			if err != nil {
				t.Fatalf("initialize through the balancer: %v", err)
			}
			tools, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			found := false
			for _, tool := range tools.Tools {
				found = found || tool.Name == "weather-a__current_weather"
			}
			if !found {
				t.Fatalf("tools/list has no weather-a__current_weather: %d tools", len(tools.Tools))
			}
			const calls = 6
			for i := range calls {
				var req mcp.CallToolRequest
				req.Params.Name = "weather-a__current_weather"
				req.Params.Arguments = map[string]any{"city": fmt.Sprintf("mcp-%s-%d", c.name, i)}
				res, err := cl.CallTool(ctx, req)
				if err != nil {
					t.Fatalf("tools/call %d: %v", i, err)
				}
				if res.IsError {
					t.Fatalf("tools/call %d: tool error %v", i, res.Content)
				}
			}
			cl.Close()
			hops := tr.bal.stopTrace()
			seen := map[int]bool{}
			var path []string
			for i, h := range hops {
				seen[h.backend] = true
				path = append(path, fmt.Sprintf("%s→%d", h.method, h.backend+1))
				if i > 0 && h.backend == hops[i-1].backend {
					t.Errorf("requests %d and %d landed on the same instance", i, i+1)
				}
			}
			if len(seen) != 3 {
				t.Errorf("the session used %d instances, want 3", len(seen))
			}
			t.Logf("protocol %s: %d requests, each on the next instance: %s", init.ProtocolVersion, len(hops), strings.Join(path, ", "))
			if init.ProtocolVersion >= "2026" {
				return // stateless: no session to carry
			}
			// The handshake's session: issued by one instance, carried to
			// the others by every later request.
			if len(hops) == 0 || hops[0].issued == "" {
				t.Fatalf("initialize answered without an Mcp-Session-Id: %+v", hops)
			}
			sid, others := hops[0].issued, map[int]bool{}
			for _, h := range hops[1:] {
				if h.session != sid {
					t.Errorf("%s on instance %d carried session %q, want %q", h.method, h.backend+1, h.session, sid)
				}
				if h.backend != hops[0].backend {
					others[h.backend] = true
				}
			}
			t.Logf("protocol %s: Mcp-Session-Id issued by instance %d, accepted by %d other instances", init.ProtocolVersion, hops[0].backend+1, len(others))
		})
	}
}

// registrationPropagates registers a vendor on instance 1 and calls it on
// instances 3 and 2.
func registrationPropagates(t *testing.T, tr *trio) {
	start := time.Now()
	st, body, err := postJSON(tr.hubs[0].URL()+"/v1/vendors/late", map[string]any{
		"mcp":   map[string]any{"transport": "http", "url": "http://" + tr.vaddr + "/maps/mcp"},
		"probe": map[string]any{"disabled": true},
	})
	if err != nil || st != http.StatusOK {
		t.Fatalf("register on instance 1: %d %v %v", st, body, err)
	}
	for _, i := range []int{2, 1} {
		h := tr.hubs[i]
		for deadline := time.Now().Add(15 * time.Second); ; {
			st, body, err := callTool(h.URL(), "late__route", map[string]any{"from": "Oslo", "to": "Bergen"})
			if err == nil && st == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: late__route not callable 15s after it was registered on instance 1: %d %v %v", h.Name(), st, body, err)
			}
			time.Sleep(10 * time.Millisecond) // polling a condition
		}
		t.Logf("vendor registered on instance 1 callable on %s after %v", h.Name(), time.Since(start).Round(time.Millisecond))
	}
	if c := tr.vendors[vendors.Maps].Counters(); c.OK < 2 {
		t.Errorf("maps answered %d calls, want at least 2", c.OK)
	}
}

// Log lines of an instance's limiter leaving Redis for its local fallback
// limit (rate/instances, a burst of its own) and coming back.
const (
	logLimiterDown = "limit: shared limiter unreachable, using fallback limits"
	logLimiterBack = "limit: shared limiter reachable again, fallback ended"
)

// fallbacks counts the times the instances' limiters left Redis, and
// whether each is back on it.
func fallbacks(tr *trio) (n int, allBack bool) {
	allBack = true
	for _, h := range tr.hubs {
		log := h.Logs()
		down := strings.Count(log, logLimiterDown)
		n += down
		allBack = allBack && strings.Count(log, logLimiterBack) >= down
	}
	return n, allBack
}

// globalLimit loads one vendor's limit from the three instances at once,
// as TestThreeHubsShareOneRedisLimit does in process: the limit admits
// (burst − reserve) + rate·span calls over the span from the first to the
// last admitted call, whichever instance admits them.
//
// An instance whose limiter Redis answers too slowly (over 100ms: a very
// busy machine) falls back to its local limit, as designed, and the limit
// is then no longer global: such a window is measured again, twice at most.
func globalLimit(t *testing.T, tr *trio) {
	for window := 1; ; window++ {
		// A limiter on its fallback probes Redis only when a call asks it
		// (limit.Fallback: at most once a second), so the wait sends one
		// call to each instance now and then, and lets the bucket refill
		// after them.
		var nudged time.Time
		drilltest.WaitFor(t, 15*time.Second, "every limiter on Redis", func() bool {
			if _, back := fallbacks(tr); back {
				return true
			}
			if time.Since(nudged) > 250*time.Millisecond {
				nudged = time.Now()
				for _, h := range tr.hubs {
					_, _, _ = callTool(h.URL(), "metered__current_weather", map[string]any{"location": "Oslo"})
				}
			}
			return false
		})
		if !nudged.IsZero() {
			time.Sleep(time.Duration(float64(limitBurst)/limitRate*float64(time.Second)) + 100*time.Millisecond)
		}
		down, _ := fallbacks(tr)
		got, want, report := measureLimit(t, tr)
		if after, _ := fallbacks(tr); after == down {
			t.Log(report)
			if got < want*0.98 || got > want*1.02 {
				t.Errorf("admitted %v calls, want %.1f ±2%%", got, want)
			}
			return
		}
		t.Logf("window %d: an instance's limiter fell back to its local limit during it (%s); measuring again", window, report)
		if window == 3 {
			t.Fatalf("the limiters fell back to local limits in %d windows in a row: Redis answered them over 100ms", window)
		}
		// The next window starts with a full bucket, as the first did.
		time.Sleep(time.Duration(float64(limitBurst)/limitRate*float64(time.Second)) + 100*time.Millisecond)
	}
}

// measureLimit runs one window of load on the limited vendor and returns
// the calls admitted, the calls the limit should have admitted, and a
// line that says so.
func measureLimit(t *testing.T, tr *trio) (got, want float64, report string) {
	before := tr.vendors[vendors.WeatherB].Counters().CallsTotal
	var admitted, limited, first, last atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, 1)
	end := time.Now().Add(limitSecs * time.Second)
	for _, h := range tr.hubs {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) {
					// The limiter decides moments after the call is sent and
					// before the vendor answers: the send time is the closer
					// clock, so a busy machine's slow answers skew nothing.
					sent := time.Now().UnixNano()
					st, body, err := callTool(h.URL(), "metered__current_weather", map[string]any{"location": "Oslo"})
					switch {
					case err == nil && st == http.StatusOK:
						admitted.Add(1)
						for f := first.Load(); (f == 0 || sent < f) && !first.CompareAndSwap(f, sent); f = first.Load() {
						}
						for l := last.Load(); sent > l && !last.CompareAndSwap(l, sent); l = last.Load() {
						}
					case err == nil && st == http.StatusTooManyRequests:
						limited.Add(1)
						// Wait as told, a little at most: the limit stays
						// saturated without burning the cores it runs on.
						time.Sleep(min(max(retryAfter(body), time.Millisecond), 10*time.Millisecond))
					default:
						select {
						case errs <- fmt.Sprintf("%s: %d %v %v", h.Name(), st, body, err):
						default:
						}
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	select {
	case e := <-errs:
		t.Fatalf("unexpected answer: %s", e)
	default:
	}
	if c := tr.vendors[vendors.WeatherB].Counters().CallsTotal - before; c != admitted.Load() {
		t.Errorf("weather-b received %d calls, the instances admitted %d", c, admitted.Load())
	}
	span := time.Duration(last.Load() - first.Load()).Seconds()
	reserve := limit.Priority{}.Reserve(limit.Rule{Rate: limitRate, Burst: limitBurst}, 1, limit.Class{})
	want = limitRate*span + float64(limitBurst-reserve)
	got = float64(admitted.Load())
	return got, want, fmt.Sprintf("3 instances, one limit of %v/s (burst %d, reserve %d) for %.2fs: admitted %v (expected %.1f, %+.2f%%), refused %d",
		limitRate, limitBurst, reserve, span, got, want, 100*(got-want)/want, limited.Load())
}

// killOneMidLoad keeps direct calls flowing through the balancer, queues
// image jobs while both image vendors fail, heals the primary with every
// job held at it (four per instance, as each has four workers), holds the
// direct calls too, SIGKILLs instance 2, and checks:
// every job succeeds (instance 2's are reclaimed by the others when their
// leases expire), each job's work is done once at the vendor, and after
// instance 2 restarts on its data folder (replaying its write-ahead log),
// the ledger's attempts match the vendors' counts exactly.
func killOneMidLoad(t *testing.T, tr *trio) {
	wa, doubao, sd := tr.vendors[vendors.WeatherA], tr.vendors[vendors.Doubao], tr.vendors[vendors.SD]
	// 12 jobs = 4 workers × 3 instances: every worker ends up holding one.
	const jobsN = 12
	harness.SetKnobs(t, wa, vendors.Knobs{Latency: time.Millisecond}) // every call passes weather-a's gate

	// Direct calls, all the time, through the balancer.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var answered, lost atomic.Int64
	const loaders = 6
	for w := range loaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				st, _, err := callTool(tr.bal.url, "weather-a__current_weather", map[string]any{"city": fmt.Sprintf("load-%d-%d", w, i)})
				if err == nil && st == http.StatusOK {
					answered.Add(1)
				} else {
					lost.Add(1) // in flight at the killed instance
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()

	harness.SetKnobs(t, doubao, vendors.Knobs{Mode: vendors.ModeFail})
	harness.SetKnobs(t, sd, vendors.Knobs{Mode: vendors.ModeFail})
	var ids []string
	for i := range jobsN {
		st, body, err := callTool(tr.bal.url, "image.generate", map[string]any{"prompt": fmt.Sprintf("cluster job %d", i)})
		if err != nil || st != http.StatusOK {
			t.Fatalf("image.generate: %d %v %v", st, body, err)
		}
		p, _ := body["provenance"].(map[string]any)
		id, _ := p["job_id"].(string)
		if q, _ := p["queued"].(bool); !q || id == "" {
			t.Fatalf("image.generate with both vendors failing was not queued: %v", body)
		}
		ids = append(ids, id)
	}
	// Heal doubao with its calls held (sd keeps failing, and never holds
	// a call): every worker of every instance ends up holding one job.
	tr.gates[vendors.Doubao].Close()
	harness.SetKnobs(t, doubao, vendors.Knobs{Latency: time.Millisecond})
	drilltest.WaitFor(t, 30*time.Second, "every job running at doubao", func() bool { return doubao.Counters().InFlight == jobsN })
	drilltest.WaitFor(t, 10*time.Second, "direct load running", func() bool { return answered.Load() >= 100 })

	// Hold the direct calls at weather-a too, so that instance 2 dies with
	// some of them (the ones the balancer sent it) answered by the vendor
	// but never heard back: the ledger must have them as unknown.
	tr.gates[vendors.WeatherA].Close()
	drilltest.WaitFor(t, 10*time.Second, "every direct call held at weather-a", func() bool { return wa.Counters().InFlight == loaders })
	heldAt2 := tr.bal.inflight[1].Load()

	killed := tr.hubs[1]
	killed.Kill()
	killedAt := time.Now()
	tr.gates[vendors.WeatherA].Open()
	tr.gates[vendors.Doubao].Open() // doubao finishes instance 2's jobs; nobody hears it
	answeredAtKill := answered.Load()
	// Instance 2's jobs run again once their leases expire (doubao
	// answers each from its idempotency keys); every job succeeds.
	var rerun []string
	pending := slices.Clone(ids)
	deadline := time.Now().Add(45 * time.Second)
	for replayed := int64(0); len(pending) > 0; {
		if r := doubao.Counters().Replayed; r > replayed {
			for ; replayed < r; replayed++ {
				rerun = append(rerun, time.Since(killedAt).Round(10*time.Millisecond).String())
			}
		}
		pending = slices.DeleteFunc(pending, func(id string) bool {
			return drill.JobSucceeded(t.Context(), tr.bal.url, id)
		})
		if time.Now().After(deadline) {
			t.Fatalf("jobs %v not succeeded 45s after the kill", pending)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition
	}
	reclaimed := time.Since(killedAt)
	drilltest.WaitFor(t, 10*time.Second, "direct load going on after the kill", func() bool { return answered.Load() >= answeredAtKill+100 })
	t.Logf("kill → reclaimed: instance 2 died holding %d direct calls; doubao answered re-runs from its keys %v after the kill; all %d jobs succeeded %v after it (jobs.lease 2s); %d direct calls answered since",
		heldAt2, rerun, jobsN, reclaimed.Round(time.Millisecond), answered.Load()-answeredAtKill)

	// Restart instance 2 on its data folder: its write-ahead log goes to
	// the shared ledger before it listens. It takes load again.
	restarted := launchHub(t, "instance 2 (restarted)", tr.cfgPath, tr.data[1])
	await(t, restarted, static...)
	tr.hubs[1] = restarted
	tr.bal.set(1, restarted)
	for _, line := range strings.Split(restarted.Logs(), "\n") {
		if strings.Contains(line, "write-ahead log") {
			t.Logf("restart: %s", line)
		}
	}
	servedBefore := tr.bal.served[1].Load()
	drilltest.WaitFor(t, 10*time.Second, "restarted instance 2 serving", func() bool { return tr.bal.served[1].Load() >= servedBefore+50 })
	stop.Store(true)
	wg.Wait()

	// Stop all three: their meters write out to the ledger.
	for _, h := range tr.hubs {
		drilltest.Stop(t, h)
	}
	dc, sc, wc := doubao.Counters(), sd.Counters(), wa.Counters()
	t.Logf("vendors: weather-a %+v", wc)
	t.Logf("vendors: doubao %+v; sd %+v", dc, sc)
	t.Logf("clients: %d direct calls answered, %d lost with the killed instance", answered.Load(), lost.Load())

	// Each job's work done once at the vendor: doubao completed every key
	// once (a re-run is answered from its memory).
	if dc.UniqueCompleted != jobsN || sc.UniqueCompleted != 0 {
		t.Errorf("jobs completed at doubao %d, at sd %d; want %d and 0 (exactly once each)", dc.UniqueCompleted, sc.UniqueCompleted, jobsN)
	}

	// The ledger: one attempt event per call each vendor received, with a
	// key of its own; answers toolhub heard are ok, the calls held when
	// instance 2 died are unknown, the failures are errors.
	ctx := t.Context()
	l, err := pgledger.Open(ctx, pgtest.DSN(t), &pgledger.Options{Schema: tr.schema, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keys := map[string]bool{}
	attempts := func(vendor string) (map[billing.Outcome]int64, int64, int) {
		out := map[billing.Outcome]int64{}
		var n int64
		callIDs := map[string]bool{}
		err := l.Query(ctx, billing.Filter{Vendor: vendor, Kind: billing.KindAttempt}, func(e billing.Event) error {
			n++
			out[e.Outcome]++
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
		return out, n, len(callIDs)
	}
	var ledgerOK, ledgerUnknown = map[string]int64{}, map[string]int64{}
	for _, v := range []struct {
		name string
		c    vendors.Counters
	}{
		{vendors.WeatherA, wc},
		{vendors.Doubao, dc},
		{vendors.SD, sc},
	} {
		out, n, calls := attempts(v.name)
		ledgerOK[v.name], ledgerUnknown[v.name] = out[billing.OutcomeOK], out[billing.OutcomeUnknown]
		t.Logf("ledger: %s %d attempts %v (%d distinct calls); vendor received %d (ok %d, failed %d)",
			v.name, n, out, calls, v.c.CallsTotal, v.c.OK, v.c.Failed)
		if n != v.c.CallsTotal {
			t.Errorf("%s: ledger has %d attempts, the vendor received %d calls", v.name, n, v.c.CallsTotal)
		}
		if out[billing.OutcomeOK]+out[billing.OutcomeUnknown] != v.c.OK {
			t.Errorf("%s: ledger ok %d + unknown %d, the vendor answered %d calls ok", v.name, out[billing.OutcomeOK], out[billing.OutcomeUnknown], v.c.OK)
		}
		if out[billing.OutcomeError] != v.c.Failed {
			t.Errorf("%s: ledger has %d error attempts, the vendor failed %d calls", v.name, out[billing.OutcomeError], v.c.Failed)
		}
		// A direct call makes one attempt (retries are off); a job's runs
		// may share its call id, each attempt with a key of its own.
		if v.name == vendors.WeatherA && int64(calls) != n {
			t.Errorf("%s: %d distinct call ids for %d attempts (retries are off: want one attempt per call)", v.name, calls, n)
		}
	}
	// The calls instance 2 died with are in the ledger as unknown: the
	// direct calls it held at weather-a, and its jobs' calls at doubao
	// (each then run again elsewhere).
	if ledgerUnknown[vendors.WeatherA] != heldAt2 {
		t.Errorf("weather-a: %d unknown attempts, want %d (the direct calls held at instance 2 when it died)", ledgerUnknown[vendors.WeatherA], heldAt2)
	}
	if u := ledgerUnknown[vendors.Doubao]; u < 1 || u > jobsN/3 {
		t.Errorf("doubao: %d unknown attempts, want 1 to %d (the jobs instance 2 held when it died)", u, jobsN/3)
	}
	if ledgerUnknown[vendors.SD] != 0 {
		t.Errorf("sd: %d unknown attempts, want 0 (it never held a call)", ledgerUnknown[vendors.SD])
	}
	// A re-run carries its job's key; it may reach doubao while the dead
	// instance's call still runs there, so it is repeated, not always replayed.
	if dc.Repeated < 1 {
		t.Errorf("doubao received no repeated key: none of instance 2's jobs ran again elsewhere (replayed %d)", dc.Replayed)
	}
	// Every answer a client got was metered (some the killed instance
	// metered never reached the client), and every call held at instance 2
	// was lost to its client.
	if answered.Load() > ledgerOK[vendors.WeatherA] {
		t.Errorf("clients got %d weather-a answers through the balancer, the ledger has %d ok attempts", answered.Load(), ledgerOK[vendors.WeatherA])
	}
	if lost.Load() < heldAt2 {
		t.Errorf("clients lost %d calls, want at least the %d held at instance 2 when it died", lost.Load(), heldAt2)
	}
}
