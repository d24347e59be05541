package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/pgledger"
)

// InstanceOptions configure [InstanceKill]. Binary is required; zero
// fields of the others mean the defaults.
type InstanceOptions struct {
	// Binary is the toolhub executable the instances run (`toolhub serve`):
	// os.Executable() from `toolhub drill`, a built binary from tests.
	Binary string
	// Vendors serves weather-a (the traffic) and doubao (the jobs); required.
	// toolhub ships none: callers pass the example vendors
	// (examples/drillvendors).
	Vendors VendorServer
	// Env is added to the instances' environment.
	Env []string
	// Instances is how many run; zero means 3 (at least 2).
	Instances int
	// Rate is the offered calls/s, spread over the instances; zero means 100.
	Rate float64
	// Jobs is how many image jobs are running when the instance is killed;
	// zero means 6.
	Jobs int
	// Redis (host:port) and Postgres (a postgres:// URL) are the shared
	// stores; "" means [DefaultRedis] and [DefaultPostgres]. The drill uses
	// a key prefix and a schema of its own, removed at the end.
	Redis, Postgres string
	// Logs, if set, receives every instance's log lines, prefixed.
	Logs io.Writer
}

// InstanceReport is what the instance drill measured.
type InstanceReport struct {
	Instances int
	Rate      float64
	Calls     int64 // calls the client made (a retried call counts once)
	// ClientErrors: calls no instance answered, even after the client's
	// retry (must be 0).
	ClientErrors int64
	FirstError   string
	// InFlightFailed: calls sent to the killed instance before it died that
	// never got an answer from it; the client retried them elsewhere.
	InFlightFailed int64
	// Moved: calls the client retried on another instance (the in-flight
	// ones and those the dead instance refused); MovedAfter: kill → the
	// first of them answered.
	Moved      int64
	MovedAfter time.Duration
	// Jobs were running at the vendor when the instance died; JobsOnKilled
	// of them on the killed instance (its attempts the restart recovered as
	// unknown). JobsLost never finished; JobsDone finished at the vendor
	// (distinct idempotency keys: must equal Jobs). JobsAfter: kill →
	// every job succeeded.
	Jobs, JobsOnKilled, JobsLost, JobsDone int64
	JobsAfter                              time.Duration
	// RestartAfter: restart on the same data folder → the instance
	// answering again; Recovered and Unknown are what its write-ahead log
	// recovery reported; RestartCalls the calls it then answered.
	RestartAfter       time.Duration
	Recovered, Unknown int64
	RestartCalls       int64
	// The ledger against the vendors' counters. LedgerAttempts are the
	// attempt events, Unknown of them recovered from the killed instance's
	// log (it died before the answer); VendorCalls the calls the vendors
	// received. Every received call must have an event, and an unknown one
	// may stand for an attempt that died on its way (Unsent of them):
	// LedgerAttempts − Unknown ≤ VendorCalls ≤ LedgerAttempts.
	VendorCalls, LedgerAttempts, UnknownAttempts, Unsent int64
	// AttemptsLost: vendor calls with no attempt event (must be 0).
	// AttemptsExtra: answered attempt events beyond the calls a vendor
	// received, or ok events beyond the calls it answered ok (must be 0).
	AttemptsLost, AttemptsExtra int64
	// EventsLost: answered weather calls with no call event in the ledger
	// (must be 0). EventsExtra: weather call events for calls no client saw
	// answered, beyond those in flight on the killed instance (must be 0).
	EventsLost, EventsExtra int64
}

func (r InstanceReport) String() string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	s := fmt.Sprintf("1 of %d instances killed (SIGKILL) at %.0f calls/s: %d calls, %d client errors; %d in flight on it failed, %d calls moved to the others (first answered %v after the kill); "+
		"%d jobs running, %d on the killed instance, reclaimed and all done %v after the kill (lost %d, completed at the vendor %d); "+
		"restarted on its data folder, answering %v later (write-ahead log: %d events recovered, %d attempts unknown), then %d calls; "+
		"ledger %d vendor attempts (%d unknown: in flight at the kill, %d of them never reached the vendor) vs %d calls the vendors received (lost %d, duplicated %d); usage events lost %d, duplicated %d",
		r.Instances, r.Rate, r.Calls, r.ClientErrors, r.InFlightFailed, r.Moved, ms(r.MovedAfter),
		r.Jobs, r.JobsOnKilled, ms(r.JobsAfter), r.JobsLost, r.JobsDone,
		ms(r.RestartAfter), r.Recovered, r.Unknown, r.RestartCalls,
		r.LedgerAttempts, r.UnknownAttempts, r.Unsent, r.VendorCalls, r.AttemptsLost, r.AttemptsExtra, r.EventsLost, r.EventsExtra)
	if r.FirstError != "" {
		s += " (first error: " + r.FirstError + ")"
	}
	return s
}

// Ok reports whether the drill lost nothing and counted nothing twice.
func (r InstanceReport) Ok() bool {
	return r.ClientErrors == 0 && r.JobsLost == 0 && r.JobsDone == r.Jobs && r.AttemptsLost == 0 &&
		r.AttemptsExtra == 0 && r.EventsLost == 0 && r.EventsExtra == 0
}

// The vendors of [InstanceKill], as instanceConfig names them.
const (
	vendorWeatherA = "weather-a"
	vendorDoubao   = "doubao"
)

// instanceConfig is every instance's toolhub.yaml: shared Redis and
// PostgreSQL, weather-a for the traffic and doubao for the jobs (image
// calls queued while it fails). The instance to be killed runs more job
// workers than the others together, so it holds most running jobs.
const instanceConfig = `addr: 127.0.0.1:0
log_level: info
redis: redis://%[1]s/0
redis_prefix: %[2]q
postgres: %[3]q
postgres_schema: %[4]s
instances: %[5]d
outbound: {allow: [%[6]q]}
governance:
  retry: {max: 0}
  breaker: {min_calls: 1000000, consecutive_failures: 1000000}
jobs: {workers: %[7]d, max_attempts: 1000, lease: 1s}
fallback:
  degradation: {min_samples: 1000000}
  capabilities: {image.generate: {queue: true}}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "http://%[6]s/weather-a/mcp"}
    probe: {disabled: true}
  - id: doubao
    mcp: {transport: http, url: "http://%[6]s/doubao/mcp"}
    probe: {disabled: true}
capabilities:
  - name: image.generate
    input_schema: {type: object, required: [prompt], properties: {prompt: {type: string}}}
    chain: [{tool: doubao/generate_image}]
`

// InstanceKill runs several `toolhub serve` processes on one Redis and one
// PostgreSQL, spreads weather calls over them from a client that retries
// a failed call on the next instance (as a load balancer would), has image
// jobs running at the vendor, and kills one instance with SIGKILL. It
// reports the calls that failed on it, how the traffic moved, whether its
// jobs were reclaimed and finished exactly once, and, after restarting it
// on its data folder (write-ahead log recovery), whether the ledger holds
// every vendor attempt and every answered call exactly once.
func InstanceKill(ctx context.Context, opts *InstanceOptions) (InstanceReport, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return InstanceReport{}, err
	}
	rep := InstanceReport{Instances: o.Instances, Rate: o.Rate, Jobs: int64(o.Jobs)}
	if _, err := pgTarget(o.Postgres); err != nil {
		return rep, err
	}

	// The vendors run here, so their counters outlive any instance. doubao
	// holds its calls at a gate, and finishes them even when the caller died.
	g := &Gate{}
	served, err := o.Vendors.Serve(map[string]*VendorOptions{
		vendorWeatherA: {Knobs: Knobs{Latency: 50 * time.Millisecond}},
		vendorDoubao:   {Knobs: Knobs{Fault: FaultFail}, Gate: g},
	})
	if err != nil {
		return rep, err
	}
	defer served.Close()
	vs, vaddr := served.Vendors, served.Addr
	defer g.Open()

	dir, err := os.MkdirTemp("", "toolhub-drill-instances-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	id := uniqueID("")
	prefix, schema := "drill-"+id+":", "toolhub_drill_"+id
	defer dropRedisPrefix(o.Redis, prefix)
	defer dropSchema(o.Postgres, schema)
	const victim = 0
	cfgs, err := writeInstanceConfigs(dir, o, prefix, schema, vaddr, victim)
	if err != nil {
		return rep, err
	}

	// Start every instance (the first alone: it creates the schema).
	hubs := make([]*Process, o.Instances)
	defer killAll(hubs)
	start := func(i int) (*Process, error) {
		return startHub(ctx, o.Binary, o.Env, o.Logs, i, cfgs[i], filepath.Join(dir, fmt.Sprintf("data-%d", i)), vendorWeatherA, vendorDoubao)
	}
	if err := startInstances(hubs, start); err != nil {
		return rep, err
	}
	lb := newBalancer(hubs, victim)
	tr := startTraffic(ctx, o.Rate, lb.call)
	defer tr.stop()
	sleep(ctx, 300*time.Millisecond)

	// Queue image jobs while doubao fails, then heal it with the gate
	// closed: the jobs' next tries are held at doubao.
	jobIDs, err := queueImageJobs(ctx, hubs[victim].URL(), id, o.Jobs)
	if err != nil {
		return rep, err
	}
	doubao := vs[vendorDoubao]
	if err := holdAtVendor(ctx, g, doubao, o.Jobs); err != nil {
		return rep, err
	}

	killed, err := killAndRestart(ctx, hubs, victim, start, lb, g, jobIDs, &rep)
	if err != nil {
		return rep, err
	}
	sleep(ctx, 300*time.Millisecond)
	tr.stop()

	if err := stopAll(hubs); err != nil {
		return rep, err
	}
	rep.traffic(tr, lb, killed)
	rep.JobsDone = doubao.Counters().UniqueCompleted
	rep.JobsLost = int64(o.Jobs) - min(rep.JobsDone, int64(o.Jobs))
	return rep, countLedger(ctx, o.Postgres, schema, vs, lb, &rep)
}

func (opts *InstanceOptions) withDefaults() (InstanceOptions, error) {
	var o InstanceOptions
	if opts != nil {
		o = *opts
	}
	if err := needProcesses("InstanceOptions", o.Binary, o.Vendors); err != nil {
		return o, err
	}
	if o.Instances <= 1 {
		o.Instances = 3
	}
	if o.Rate <= 0 {
		o.Rate = 100
	}
	if o.Jobs <= 0 {
		o.Jobs = 6
	}
	if o.Redis == "" {
		o.Redis = DefaultRedis
	}
	if o.Postgres == "" {
		o.Postgres = DefaultPostgres
	}
	return o, nil
}

// writeInstanceConfigs writes one config per instance into dir: the
// victim runs enough job workers to hold every job, the others one.
func writeInstanceConfigs(dir string, o InstanceOptions, prefix, schema, vaddr string, victim int) ([]string, error) {
	cfgs := make([]string, o.Instances)
	for i := range cfgs {
		workers := 1
		if i == victim {
			workers = o.Jobs + 2
		}
		cfgs[i] = filepath.Join(dir, fmt.Sprintf("toolhub-%d.yaml", i))
		text := fmt.Sprintf(instanceConfig, o.Redis, prefix, o.Postgres, schema, o.Instances, vaddr, workers)
		if err := os.WriteFile(cfgs[i], []byte(text), 0o600); err != nil {
			return nil, err
		}
	}
	return cfgs, nil
}

// startInstances starts every instance into hubs: the first alone (it
// creates the schema), then the others in parallel.
func startInstances(hubs []*Process, start func(int) (*Process, error)) error {
	var err error
	if hubs[0], err = start(0); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(hubs))
	for i := 1; i < len(hubs); i++ {
		wg.Add(1)
		go func() { defer wg.Done(); hubs[i], errs[i] = start(i) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func newBalancer(hubs []*Process, victim int) *balancer {
	lb := &balancer{urls: make([]atomic.Pointer[string], len(hubs)), up: make([]atomic.Bool, len(hubs)), victim: victim}
	for i, h := range hubs {
		u := h.URL()
		lb.urls[i].Store(&u)
		lb.up[i].Store(true)
	}
	return lb
}

// readmit sends traffic to the restarted victim at its new url.
func (b *balancer) readmit(victim int, url string) {
	b.urls[victim].Store(&url)
	b.restarted.Store(true)
	b.up[victim].Store(true)
}

// queueImageJobs queues n image jobs on the hub at url (doubao fails, so
// each call is answered with a job id).
func queueImageJobs(ctx context.Context, url, id string, n int) ([]string, error) {
	var jobIDs []string
	for i := range n {
		st, body, err := postJSON(ctx, url+"/v1/tools/image.generate/call", map[string]any{"arguments": map[string]any{"prompt": fmt.Sprintf("drill %s %d", id, i)}})
		p, _ := body["provenance"].(map[string]any)
		jid, _ := p["job_id"].(string)
		if err != nil || st != http.StatusOK || jid == "" {
			return nil, fmt.Errorf("queueing image job %d: %d %v %v", i, st, body, err)
		}
		jobIDs = append(jobIDs, jid)
	}
	return jobIDs, nil
}

// holdAtVendor heals doubao with its gate g closed, and waits until the
// jobs' next tries (n) are all held there.
func holdAtVendor(ctx context.Context, g *Gate, doubao Vendor, n int) error {
	g.Close()
	if err := doubao.SetKnobs(Knobs{Latency: time.Millisecond}); err != nil {
		return err
	}
	if _, err := waitFor(ctx, 30*time.Second, func() bool { return doubao.Counters().InFlight == int64(n) }); err != nil {
		return fmt.Errorf("the jobs never all reached doubao (%d in flight): %w", doubao.Counters().InFlight, err)
	}
	return nil
}

// killAndRestart kills the victim mid-load, with jobs and calls in
// flight, waits for the other instances to finish its jobs, and restarts
// it on its data folder (its write-ahead log goes to the ledger). It
// returns when the victim was killed.
func killAndRestart(ctx context.Context, hubs []*Process, victim int, start func(int) (*Process, error), lb *balancer, g *Gate, jobIDs []string, rep *InstanceReport) (killed time.Time, err error) {
	killed = time.Now()
	lb.killedAt.Store(killed.UnixNano())
	hubs[victim].Kill()
	g.Open() // doubao finishes the jobs; the killed instance never hears
	jobsDone, err := waitFor(ctx, 60*time.Second, func() bool { return jobsSucceeded(ctx, hubs[1:], jobIDs) })
	if err != nil {
		return killed, fmt.Errorf("the jobs never all succeeded after the kill: %w", err)
	}
	rep.JobsAfter = jobsDone.Sub(killed)

	restart := time.Now()
	if hubs[victim], err = start(victim); err != nil {
		return killed, fmt.Errorf("restarting the killed instance: %w", err)
	}
	rep.RestartAfter = time.Since(restart)
	rep.Recovered, rep.Unknown = recovered(hubs[victim])
	lb.readmit(victim, hubs[victim].URL()) // it listens on a new port
	return killed, nil
}

// killAll kills the instances still running (its elements may change
// after the defer: the victim is restarted into its slot).
func killAll(hubs []*Process) {
	for _, h := range hubs {
		if h != nil {
			h.Kill()
		}
	}
}

// stopAll stops every instance gracefully: their meters flush to the
// ledger.
func stopAll(hubs []*Process) error {
	for _, h := range hubs {
		if err := stopHub(h); err != nil {
			return err
		}
	}
	return nil
}

// traffic fills in what the client and the balancer saw.
func (r *InstanceReport) traffic(tr *traffic, lb *balancer, killed time.Time) {
	r.Calls, r.ClientErrors = tr.calls.Load(), tr.errs.Load()
	if err := tr.err(); err != nil {
		r.FirstError = err.Error()
	}
	r.InFlightFailed, r.Moved, r.RestartCalls = lb.inFlight.Load(), lb.moved.Load(), lb.restartCalls.Load()
	if f := lb.firstMoved.Load(); f != 0 {
		r.MovedAfter = time.Unix(0, f).Sub(killed)
	}
}

// countLedger compares the shared ledger with the vendors' counters and
// the calls the client saw answered.
func countLedger(ctx context.Context, dsn, schema string, vs map[string]Vendor, lb *balancer, rep *InstanceReport) error {
	l, err := pgledger.Open(ctx, dsn, &pgledger.Options{Schema: schema, ReadOnly: true})
	if err != nil {
		return err
	}
	defer l.Close()
	calls := map[string]bool{} // weather call events, by call id
	type tally struct{ ok, known, unknown int64 }
	byVendor := map[string]*tally{}
	var unknownDoubao int64
	err = l.Query(ctx, billing.Filter{}, func(e billing.Event) error {
		switch e.Kind {
		case billing.KindCall:
			if e.Vendor == vendorWeatherA {
				calls[e.CallID] = true
			}
		case billing.KindAttempt:
			t := byVendor[e.Vendor]
			if t == nil {
				t = &tally{}
				byVendor[e.Vendor] = t
			}
			switch e.Outcome {
			case billing.OutcomeUnknown:
				t.unknown++
				if e.Vendor == vendorDoubao {
					unknownDoubao++
				}
			case billing.OutcomeOK:
				t.ok++
				t.known++
			default:
				t.known++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for name, v := range vs {
		c := v.Counters()
		t := byVendor[name]
		if t == nil {
			t = &tally{}
		}
		rep.VendorCalls += c.CallsTotal
		rep.LedgerAttempts += t.known + t.unknown
		rep.UnknownAttempts += t.unknown
		rep.AttemptsLost += max(c.CallsTotal-t.known-t.unknown, 0)
		rep.Unsent += max(t.known+t.unknown-c.CallsTotal, 0)
		rep.AttemptsExtra += max(t.known-c.CallsTotal, t.ok-c.OK, 0)
	}
	rep.JobsOnKilled = unknownDoubao
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lost, unanswered := compareCalls(lb.answered, calls)
	rep.EventsLost += lost
	// A weather call event no client saw answered can only be a call the
	// killed instance finished just before it died.
	rep.EventsExtra = max(unanswered-rep.InFlightFailed, 0)
	return nil
}

// compareCalls compares the call ids clients were answered with those the
// ledger holds: lost are answered calls missing from the ledger,
// unanswered are ledger calls no client saw answered.
func compareCalls(answered, ledger map[string]bool) (lost, unanswered int64) {
	for id := range answered {
		if !ledger[id] {
			lost++
		}
	}
	for id := range ledger {
		if !answered[id] {
			unanswered++
		}
	}
	return lost, unanswered
}

// jobsSucceeded asks a live instance for each job.
func jobsSucceeded(ctx context.Context, hubs []*Process, ids []string) bool {
	for _, id := range ids {
		if !JobSucceeded(ctx, hubs[0].URL(), id) {
			return false
		}
	}
	return true
}

// JobSucceeded asks the hub at base (an instance, or a balancer in front
// of several) whether job id succeeded.
func JobSucceeded(ctx context.Context, base, id string) bool {
	var j struct {
		Status string `json:"status"`
	}
	return getJSON(ctx, base+"/v1/jobs/"+id, &j) == nil && j.Status == "succeeded"
}

// balancer spreads calls over the instances round robin; a call that
// fails at the transport (the instance is gone) is retried on the next
// instance, which is then taken out of the rotation.
type balancer struct {
	urls      []atomic.Pointer[string]
	up        []atomic.Bool
	next      atomic.Uint64
	victim    int
	killedAt  atomic.Int64 // unix nanos
	restarted atomic.Bool

	inFlight, moved, restartCalls atomic.Int64
	firstMoved                    atomic.Int64

	mu       sync.Mutex
	answered map[string]bool // call ids
}

var cities = []string{"Oslo", "Paris", "Lima", "Kyiv", "Rome", "Lagos", "Quito", "Hanoi", "Dakar", "Perth"}

func (b *balancer) call(ctx context.Context) error {
	n := b.next.Add(1)
	body := map[string]any{"arguments": map[string]any{"city": cities[n%uint64(len(cities))]}}
	retried := false
	var last error
	for k := range len(b.urls) {
		i := int((n + uint64(k)) % uint64(len(b.urls)))
		if !b.up[i].Load() {
			continue
		}
		sent := time.Now().UnixNano()
		st, res, err := postJSON(ctx, *b.urls[i].Load()+"/v1/tools/weather-a__current_weather/call", body)
		if err != nil {
			if i == b.victim && b.killedAt.Load() != 0 && !b.restarted.Load() {
				if sent < b.killedAt.Load() {
					b.inFlight.Add(1)
				}
				b.up[i].Store(false)
			}
			last, retried = err, true
			b.moved.Add(1)
			continue
		}
		if st != http.StatusOK {
			return fmt.Errorf("instance %d: HTTP %d: %v", i, st, res)
		}
		if retried {
			b.firstMoved.CompareAndSwap(0, time.Now().UnixNano())
		}
		if i == b.victim && b.restarted.Load() {
			b.restartCalls.Add(1)
		}
		p, _ := res["provenance"].(map[string]any)
		id, _ := p["call_id"].(string)
		b.mu.Lock()
		if b.answered == nil {
			b.answered = map[string]bool{}
		}
		b.answered[id] = true
		b.mu.Unlock()
		return nil
	}
	return fmt.Errorf("no instance answered: %v", last)
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

func postJSON(ctx context.Context, url string, body any) (int, map[string]any, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, m, nil
}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// startHub starts instance i of binary with cfg and data, its log lines
// to logs (if set), and waits until it listens and vendors are ready.
func startHub(ctx context.Context, binary string, env []string, logs io.Writer, i int, cfg, data string, vendors ...string) (*Process, error) {
	po := ProcessOptions{Binary: binary, Config: cfg, Data: data, Env: env, Name: fmt.Sprintf("instance %d", i)}
	if logs != nil {
		po.Line = func(line string) { fmt.Fprintf(logs, "instance %d: %s\n", i, line) }
	}
	h, err := StartProcess(po)
	if err != nil {
		return nil, err
	}
	if _, err := h.WaitListening(ctx, 30*time.Second); err != nil {
		h.Kill()
		return nil, fmt.Errorf("%w\n%s", err, h.Tail(20))
	}
	if _, err := waitFor(ctx, 30*time.Second, func() bool { return h.VendorsReady(ctx, vendors...) }); err != nil {
		h.Kill()
		return nil, fmt.Errorf("instance %d: vendors %v not ready: %w\n%s", i, vendors, err, h.Tail(20))
	}
	return h, nil
}

// recovered reads the write-ahead log recovery line of an instance's log.
func recovered(h *Process) (events, unknown int64) {
	for _, line := range strings.Split(h.Logs(), "\n") {
		var l struct {
			Msg     string `json:"msg"`
			Events  int64  `json:"events"`
			Unknown int64  `json:"unknown_attempts"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "usage write-ahead log recovered" {
			return l.Events, l.Unknown
		}
	}
	return 0, 0
}

// stopHub stops an instance gracefully, with its last log lines on failure.
func stopHub(h *Process) error {
	if err := h.Stop(30 * time.Second); err != nil {
		return fmt.Errorf("%w\n%s", err, h.Tail(20))
	}
	return nil
}
