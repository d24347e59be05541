package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/internal/x/cputime"
)

// ImageOutageConfig is the lab config of the vendor outage drill:
// image.generate backed by doubao then sd, a cache that keeps answers as
// stale for an hour, a queue, business-level probes every 500ms (so a
// vendor that comes back is seen at once), a price per image (to count
// charges) and a 250ms recovery ramp step (5% → 100% in 750ms).
const ImageOutageConfig = `
outbound: {allow: ["{{vendors_addr}}", "127.0.0.1"]}   # the vendors, and the drill's webhook receiver
vendors:
  - id: doubao
    mcp: {transport: http, url: "{{vendors}}/doubao/mcp"}
    probe: {tool: generate_image, args: {prompt: probe}, interval: 500ms}
    limits: {rps: 400, concurrency: 32}
  - id: sd
    mcp: {transport: http, url: "{{vendors}}/sd/mcp"}
    probe: {tool: txt2img, args: {text: probe}, interval: 500ms}
    limits: {rps: 400, concurrency: 32}
capabilities:
  - name: image.generate
    input_schema: {type: object, required: [prompt], properties: {prompt: {type: string}}}
    chain:
      - tool: doubao/generate_image
      - tool: sd/txt2img
        args: [{from: /prompt, to: /text}]
cache:
  tools: {image.generate: {ttl: 1ns, keep_stale: 1h}}   # a repeat during the outage is answered stale
fallback:
  capabilities: {image.generate: {queue: {deadline: 15m}}}
governance:
  ramp_interval: 250ms
jobs: {workers: 16}
billing:
  prices:
    - version: drill
      effective: 2020-01-01T00:00:00Z
      entries:
        - {vendor: doubao, tool: "*", tenant: {per_call: "0.02"}, payout: {per_call: "0.01"}}
        - {vendor: sd, tool: "*", tenant: {per_call: "0.01"}, payout: {per_call: "0.005"}}
`

// ImageOutageDefaultsConfig is [ImageOutageConfig] as users run it: no
// business probes (each vendor gets the default MCP ping, every 10s), the
// default breaker cool-down (30s) and recovery ramp (30s a step). Waiting
// jobs find the recovery by themselves: their calls are the open
// breakers' trials (at most one a second), the vendors are pinged every
// 250ms while jobs wait for them (a good ping half-opens the breaker and
// wakes the jobs), and the recovery ramp does not hold back jobs' calls.
var ImageOutageDefaultsConfig = strings.NewReplacer(
	"    probe: {tool: generate_image, args: {prompt: probe}, interval: 500ms}\n", "",
	"    probe: {tool: txt2img, args: {text: probe}, interval: 500ms}\n", "",
	"governance:\n  ramp_interval: 250ms\n", "",
).Replace(ImageOutageConfig)

// ImageOutageOptions configure [ImageOutage]. Zero fields mean the defaults.
type ImageOutageOptions struct {
	// Duration is how long both image vendors are down; zero means 60s.
	Duration time.Duration
	// Rate is the offered calls/s, half new prompts and half repeats of
	// prompts answered before the outage; zero means 20.
	Rate float64
	// Fault is how the vendors are down; zero means HTTP 500 on every call.
	Fault Fault
	// Drain bounds the wait for the queued jobs after recovery; zero means 2m.
	Drain time.Duration
	// Profile, when set, receives a CPU profile of the process from
	// recovery until every job is final (the drain).
	Profile io.Writer
}

// ImageOutageReport is what the vendor outage drill measured.
type ImageOutageReport struct {
	Duration time.Duration
	Rate     float64
	Fault    Fault
	// During the outage: calls made, answered within 1s (stale or queued),
	// of those stale and queued; errors; the slowest answer.
	Calls, Within1s, Stale, Queued, Errors int
	Slowest                                time.Duration
	// Jobs queued during the outage, completed (succeeded) after recovery,
	// failed, and not final when the drill stopped waiting.
	Jobs, Completed, Failed, Pending int
	// Time from recovery to each job's completion.
	P50, P99, Max time.Duration
	// First is the time from recovery to the first job's completion (the
	// wake: probes, breakers' trials); Drain is the jobs completed per
	// second from the first completion to the last.
	First time.Duration
	Drain float64
	// Runs are the jobs' runs after recovery (claims), Refused those that
	// found no vendor to take them (a recovery ramp skipped them, a
	// breaker still open): they wait to be woken, without spending an
	// attempt. CPU is the process's CPU time (hub, in-process vendors and
	// the drill's client) from recovery until every job was final.
	Runs, Refused int
	CPU           time.Duration
	// Final pushes per job over the WebSocket (/v1/events) and the
	// tenant's webhook: jobs pushed twice or more, jobs never pushed (on
	// either channel).
	PushedTwice, NotPushed int
	HookedTwice, NotHooked int
	// Tenant charges per job in the ledger: jobs charged twice or more,
	// completed jobs charged nothing.
	ChargedTwice, NotCharged int
}

func (r ImageOutageReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "both image vendors down (%s) for %v at %.0f calls/s (new prompts and repeats):\n", r.Fault, r.Duration, r.Rate)
	fmt.Fprintf(&b, "  during the outage: %d calls, %d answered within 1s (%.1f%%: %d stale, %d queued), %d errors, slowest %v\n",
		r.Calls, r.Within1s, 100*float64(r.Within1s)/float64(max(r.Calls, 1)), r.Stale, r.Queued, r.Errors, r.Slowest.Round(time.Millisecond))
	fmt.Fprintf(&b, "  jobs queued %d: completed after recovery %d (%.1f%%), failed %d, still pending %d\n",
		r.Jobs, r.Completed, 100*float64(r.Completed)/float64(max(r.Jobs, 1)), r.Failed, r.Pending)
	fmt.Fprintf(&b, "  recovery → completion: median %v, p99 %v, max %v; first job %v after recovery, then %.0f jobs/s\n",
		r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Max.Round(time.Millisecond), r.First.Round(time.Millisecond), r.Drain)
	fmt.Fprintf(&b, "  the drain: %d runs for %d jobs (%d refused: ramps, breakers), %.1f ms CPU per job (this process: hub, vendors, client)\n",
		r.Runs, r.Jobs, r.Refused, float64(r.CPU.Microseconds())/1000/float64(max(r.Jobs, 1)))
	fmt.Fprintf(&b, "  pushes: WebSocket %d jobs pushed twice, %d never; webhook %d twice, %d never; charges: %d jobs charged twice, %d completed jobs not charged",
		r.PushedTwice, r.NotPushed, r.HookedTwice, r.NotHooked, r.ChargedTwice, r.NotCharged)
	return b.String()
}

// Ok reports whether the targets held: every queued job completed after
// recovery, each pushed once and charged once, every call during the
// outage answered within 1s.
func (r ImageOutageReport) Ok() bool {
	return r.Jobs > 0 && r.Completed == r.Jobs && r.PushedTwice == 0 && r.NotPushed == 0 && r.HookedTwice == 0 && r.NotHooked == 0 &&
		r.ChargedTwice == 0 && r.NotCharged == 0 && r.Within1s == r.Calls
}

// ImageOutage takes both image vendors of l (a lab on [ImageOutageConfig])
// down for the duration under load — new prompts (queued as jobs) and
// repeats (answered stale) — then restores them and waits for the jobs.
// It measures the answers during the outage, the jobs' completion after
// recovery, and the pushes and charges per job.
func ImageOutage(ctx context.Context, l *Lab, o ImageOutageOptions) (ImageOutageReport, error) {
	o = o.withDefaults()
	rep := ImageOutageReport{Duration: o.Duration, Rate: o.Rate, Fault: o.Fault}
	gw := l.App.Gateway
	gen := func(ctx context.Context, prompt string) (*hub.Result, error) {
		return gw.Call(ctx, &hub.Call{Tenant: "default", Name: "image.generate", Arguments: map[string]any{"prompt": prompt}})
	}
	for i := range outageRepeats { // warm the cache with the prompts to repeat
		if _, err := gen(ctx, fmt.Sprintf("a red fox, take %d", i)); err != nil {
			return rep, fmt.Errorf("warming the cache: %w", err)
		}
	}
	d, stop, err := followDeliveries(ctx, l)
	if err != nil {
		return rep, err
	}
	defer stop()

	if err := setModes(l, o.Fault, "doubao", "sd"); err != nil {
		return rep, err
	}
	jobIDs := outageTraffic(ctx, o, gen, &rep)
	// Follow the jobs' events from here (rather than polling every job,
	// which costs the hub as much as a drain).
	after, err := lastEvent(ctx, l.App.Jobs)
	if err != nil {
		return rep, err
	}
	if o.Profile != nil {
		if err := pprof.StartCPUProfile(o.Profile); err != nil {
			return rep, fmt.Errorf("cpu profile: %w", err)
		}
	}
	cpu := cputime.Process()
	recovered := time.Now()
	if err := setModes(l, FaultOK, "doubao", "sd"); err != nil {
		return rep, err
	}
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	done, err := drainJobs(ctx, l, o.Drain, after, recovered, jobIDs, &rep)
	if err != nil {
		return rep, err
	}
	rep.CPU = cputime.Process() - cpu
	if o.Profile != nil {
		pprof.StopCPUProfile()
	}
	rep.completions(done)
	d.count(ctx, jobIDs, rep.Completed+rep.Failed, &rep)
	return rep, countCharges(ctx, l, jobIDs, &rep)
}

// outageRepeats is how many prompts the drill repeats (answered stale).
const outageRepeats = 20

func (o ImageOutageOptions) withDefaults() ImageOutageOptions {
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	if o.Rate <= 0 {
		o.Rate = 20
	}
	if o.Fault == "" {
		o.Fault = FaultHTTP500
	}
	if o.Drain <= 0 {
		o.Drain = 2 * time.Minute
	}
	return o
}

func setModes(l *Lab, mode Fault, vendors ...string) error {
	for _, v := range vendors {
		if err := l.SetMode(v, mode); err != nil {
			return err
		}
	}
	return nil
}

// deliveries counts the final job events a client receives, per job: on
// the WebSocket (/v1/events) and on the tenant's signed webhook.
type deliveries struct {
	mu     sync.Mutex
	pushes map[string]int // job → final events pushed
	hooks  map[string]int // job → final events delivered
}

// followDeliveries follows the pushes as a client would, and registers a
// webhook receiver; stop ends both.
func followDeliveries(ctx context.Context, l *Lab) (d *deliveries, stop func(), err error) {
	d = &deliveries{pushes: map[string]int{}, hooks: map[string]int{}}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(l.HubURL, "http")+"/v1/events", nil)
	if err != nil {
		return nil, nil, fmt.Errorf("websocket /v1/events: %w", err)
	}
	go func() {
		for {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var ev jobs.Event
			if json.Unmarshal(msg, &ev) != nil || !ev.Status.Final() {
				continue
			}
			d.mu.Lock()
			d.pushes[ev.JobID]++
			d.mu.Unlock()
		}
	}()
	const secret = "drill-webhook-secret"
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev jobs.Event
		if jobs.Verify(secret, r.Header, body, time.Now(), 0) != nil || json.Unmarshal(body, &ev) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		d.mu.Lock()
		d.hooks[ev.JobID]++
		d.mu.Unlock()
	}))
	stop = func() {
		recv.Close()
		ws.Close()
	}
	if err := putWebhook(ctx, l.HubURL, recv.URL, secret); err != nil {
		stop()
		return nil, nil, err
	}
	return d, stop, nil
}

// outageTraffic calls at o.Rate for o.Duration, half repeats and half new
// prompts, counting the answers in rep; it returns the jobs queued.
func outageTraffic(ctx context.Context, o ImageOutageOptions, gen func(context.Context, string) (*hub.Result, error), rep *ImageOutageReport) []string {
	var (
		mu     sync.Mutex
		jobIDs []string
		n      atomic.Int64
	)
	tr := startTraffic(ctx, o.Rate, func(ctx context.Context) error {
		i := n.Add(1)
		prompt := fmt.Sprintf("a red fox, take %d", i%outageRepeats) // a repeat
		if i%2 == 0 {
			prompt = fmt.Sprintf("a blue whale, number %d", i) // new
		}
		start := time.Now()
		res, err := gen(ctx, prompt)
		took := time.Since(start)
		mu.Lock()
		defer mu.Unlock()
		rep.Calls++
		rep.Slowest = max(rep.Slowest, took)
		if err != nil {
			rep.Errors++
			return nil
		}
		if took <= time.Second && (res.Provenance.Stale || res.Provenance.Queued) {
			rep.Within1s++
		}
		switch {
		case res.Provenance.Stale:
			rep.Stale++
		case res.Provenance.Queued:
			rep.Queued++
			jobIDs = append(jobIDs, res.Provenance.JobID)
		}
		return nil
	})
	sleep(ctx, o.Duration)
	tr.stop()
	mu.Lock()
	defer mu.Unlock()
	return jobIDs
}

// drainJobs follows the job events after after until every job of jobIDs
// is final (or drain has passed), counting runs, refusals and outcomes in
// rep; it returns each completion's time since recovered.
func drainJobs(ctx context.Context, l *Lab, drain time.Duration, after int64, recovered time.Time, jobIDs []string, rep *ImageOutageReport) ([]time.Duration, error) {
	rep.Jobs = len(jobIDs)
	mine := make(map[string]bool, len(jobIDs))
	for _, id := range jobIDs {
		mine[id] = true
	}
	var done []time.Duration
	final := map[string]bool{}
	waitCtx, cancel := context.WithTimeout(ctx, drain)
	defer cancel()
	errDrained := errors.New("drained")
	err := l.App.Jobs.Follow(waitCtx, "", after, 100*time.Millisecond, func(e jobs.Event) error {
		if !mine[e.JobID] || final[e.JobID] {
			return nil
		}
		switch {
		case e.Status == jobs.Running:
			rep.Runs++
		case e.Status == jobs.Waiting:
			rep.Refused++
		case e.Status == jobs.Succeeded:
			rep.Completed++
			done = append(done, e.At.Sub(recovered))
		case e.Status.Final():
			rep.Failed++
		}
		if e.Status.Final() {
			final[e.JobID] = true
			if len(final) == len(jobIDs) {
				return errDrained
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDrained) && waitCtx.Err() == nil {
		return nil, err
	}
	rep.Pending = len(jobIDs) - len(final)
	return done, nil
}

// completions sets the report's recovery-to-completion figures from done.
func (r *ImageOutageReport) completions(done []time.Duration) {
	if len(done) == 0 {
		return
	}
	slices.Sort(done)
	r.P50, r.P99, r.Max = done[len(done)/2], done[min(len(done)-1, len(done)*99/100)], done[len(done)-1]
	r.First = done[0]
	if span := r.Max - r.First; span > 0 {
		r.Drain = float64(len(done)-1) / span.Seconds()
	}
}

// count gives the last of finals pushes a moment to arrive, then counts
// the jobs pushed (and hooked) never or twice.
func (d *deliveries) count(ctx context.Context, jobIDs []string, finals int, rep *ImageOutageReport) {
	_, _ = waitFor(ctx, 10*time.Second, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		seen, hooked := 0, 0
		for _, id := range jobIDs {
			if d.pushes[id] > 0 {
				seen++
			}
			if d.hooks[id] > 0 {
				hooked++
			}
		}
		return seen >= finals && hooked >= finals
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range jobIDs {
		switch d.pushes[id] {
		case 0:
			rep.NotPushed++
		case 1:
		default:
			rep.PushedTwice++
		}
		switch d.hooks[id] {
		case 0:
			rep.NotHooked++
		case 1:
		default:
			rep.HookedTwice++
		}
	}
}

// countCharges counts the jobs the ledger charged twice, and the
// completed ones it charged nothing.
func countCharges(ctx context.Context, l *Lab, jobIDs []string, rep *ImageOutageReport) error {
	charges, err := l.charges(ctx)
	if err != nil {
		return err
	}
	for _, id := range jobIDs {
		switch n := charges[id]; {
		case n > 1:
			rep.ChargedTwice++
		case n == 0:
			if j, err := l.App.Jobs.Get(ctx, id); err == nil && j.Status == jobs.Succeeded {
				rep.NotCharged++
			}
		}
	}
	return nil
}

// lastEvent is the id of q's last event.
func lastEvent(ctx context.Context, q *jobs.Queue) (int64, error) {
	var last int64
	for {
		evs, err := q.Events(ctx, "", last, 1000)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return last, nil
		}
		last = evs[len(evs)-1].ID
	}
}

// charges counts the charged call events (a tenant cost above zero) per
// call id in the ledger; a job's runs carry the job's id.
func (l *Lab) charges(ctx context.Context) (map[string]int, error) {
	if err := l.App.Meter.Flush(ctx); err != nil {
		return nil, err
	}
	out := map[string]int{}
	err := l.App.Ledger.Query(ctx, billing.Filter{From: time.Now().Add(-24 * time.Hour), To: time.Now().Add(time.Hour), Kind: billing.KindCall},
		func(e billing.Event) error {
			if e.TenantCost > 0 {
				out[e.CallID]++
			}
			return nil
		})
	return out, err
}

// putWebhook registers the default tenant's webhook with PUT /v1/webhook.
func putWebhook(ctx context.Context, hubURL, url, secret string) error {
	b, _ := json.Marshal(map[string]string{"url": url, "secret": secret})
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, hubURL+"/v1/webhook", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("PUT /v1/webhook: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("PUT /v1/webhook: %s: %s", resp.Status, body)
	}
	return nil
}
