package billing_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/sqlledger"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/jobs/sqlitejobs"
	"github.com/toolhub/toolhub/hub/retry"
	"github.com/toolhub/toolhub/registry"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// jobRig is one hub: a gateway with the meter, a capability that queues
// when its vendor fails, and a job queue whose pools run jobs through the
// gateway. The vendor deduplicates by idempotency key, as a vendor should.
type jobRig struct {
	clk    *fakeClock
	ledger *sqlledger.Ledger
	meter  *billing.Meter
	gw     *hub.Gateway
	queue  *jobs.Queue

	up      atomic.Bool
	mu      sync.Mutex
	calls   map[string]int // vendor calls by idempotency key
	onReply func()         // after the vendor answered (to crash a worker)
}

func newJobRig(t *testing.T) *jobRig {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	r := &jobRig{clk: &fakeClock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}, calls: map[string]int{}}
	cat := registry.NewCatalog()
	in := json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}}}`)
	if errs := cat.SetVendorTools("doubao", []registry.ToolDef{{Name: "generate_image", InputSchema: in}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if errs := cat.SetCapabilities([]registry.Capability{{Name: "image.generate", InputSchema: in,
		Chain: []registry.ChainStep{{Tool: "doubao/generate_image"}}}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	l := openLedger(t, dir)
	r.ledger = l
	r.meter = newMeter(t, l, &billing.MeterOptions{Pricer: billing.NewPricer(book(t), nil), Now: r.clk.Now,
		SpillDir: filepath.Join(dir, "spill")})
	store, err := sqlitejobs.Open(ctx, filepath.Join(dir, "jobs.db"), &sqlitejobs.Options{Now: r.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.queue = jobs.NewQueue(store, &jobs.Options{Now: r.clk.Now})
	t.Cleanup(func() { r.queue.Close() })
	router := fallback.New(&fallback.Options{Enqueuer: r.queue, Now: r.clk.Now,
		Config: fallback.Config{Capabilities: map[string]fallback.CapabilityConfig{"image.generate": {Queue: true}}}})
	r.gw = hub.NewGateway(cat, upstreams{
		"doubao": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			if !r.up.Load() {
				return nil, hub.Errorf(hub.CodeUnavailable, "doubao is down")
			}
			key, _ := c.Meta[jobs.MetaIdempotencyKey].(string)
			r.mu.Lock()
			r.calls[key]++
			reply := r.onReply
			r.mu.Unlock()
			if reply != nil {
				defer reply()
			}
			return &hub.Result{Structured: map[string]any{"images": 1.0}}, nil
		},
	}, &hub.Options{Outer: []hub.Middleware{r.meter.Middleware()}, Vendor: []hub.Middleware{r.meter.AttemptMiddleware()},
		Route: router.Route, Now: r.clk.Now, Logger: quiet})
	return r
}

// pool starts a pool (one hub's workers) running jobs through the gateway;
// canceling ctx kills it as a crash would.
func (r *jobRig) pool(t *testing.T, ctx context.Context, maxAttempts int) *jobs.Pool {
	t.Helper()
	p := &jobs.Pool{Store: r.queue, Run: r.gw.Call, Concurrency: 1, MaxAttempts: maxAttempts, Lease: 30 * time.Second,
		Poll: 5 * time.Millisecond, Backoff: retry.Policy{Base: time.Second, Cap: time.Second}, Now: r.clk.Now, Logger: quiet}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(sctx)
	})
	return p
}

// waitJob waits until the job satisfies cond (it re-checks at every change
// of the queue, and every few milliseconds for changes made elsewhere).
func (r *jobRig) waitJob(t *testing.T, id string, what string, cond func(*jobs.Job) bool) *jobs.Job {
	t.Helper()
	deadline := time.After(20 * time.Second) // a hang, not a speed requirement
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		changed := r.queue.Changed()
		j, err := r.queue.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(j) {
			return j
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-deadline:
			t.Fatalf("job %s never %s: %+v", id, what, j)
		}
	}
}

// queueCall makes a call while the vendor is down: it is accepted as a job.
func (r *jobRig) queueCall(t *testing.T) (callID, jobID string) {
	t.Helper()
	res, err := r.gw.Call(context.Background(), &hub.Call{Tenant: "acme", Name: "image.generate", Arguments: map[string]any{"prompt": "a cat"}})
	if err != nil || !res.Provenance.Queued || res.Provenance.JobID == "" {
		t.Fatalf("call while the vendor is down: %+v, %v; want queued", res, err)
	}
	return res.Provenance.CallID, res.Provenance.JobID
}

func (r *jobRig) events(t *testing.T) []billing.Event {
	t.Helper()
	if err := r.meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var evs []billing.Event
	if err := r.ledger.Query(context.Background(), billing.Filter{}, func(ev billing.Event) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

// summary is what the test compares of an event.
type summary struct {
	CallID, Kind, Outcome string
	TenantCost            billing.Micros
	VendorCost            billing.Micros
}

func summarize(evs []billing.Event, queuedCall, job string) (got []summary, tenantTotal billing.Micros) {
	for _, ev := range evs {
		id := ev.CallID
		switch id {
		case queuedCall:
			id = "call"
		case job:
			id = "job"
		}
		got = append(got, summary{id, string(ev.Kind), string(ev.Outcome), ev.TenantCost, ev.VendorCost})
		tenantTotal += ev.TenantCost
	}
	return got, tenantTotal
}

// TestQueuedCallChargedOnceWhenTheJobAnswers follows one queued call
// through the ledger: accepted (queued, charged nothing), a first job run
// that fails (charged nothing), a run whose worker dies after the vendor
// answered (charged: the job's result was produced), and the run after the
// lease expired on another hub's pool (the vendor deduplicates; the ledger
// drops the repeated charge). The tenant pays once.
func TestQueuedCallChargedOnceWhenTheJobAnswers(t *testing.T) {
	r := newJobRig(t)
	callID, job := r.queueCall(t)

	// Hub A's pool: the first run fails, the vendor is still down.
	ctxA, crashA := context.WithCancel(context.Background())
	poolA := r.pool(t, ctxA, 5)
	r.waitJob(t, job, "retried", func(j *jobs.Job) bool { return j.Status == jobs.Queued && j.Attempts == 1 })

	// The vendor is back; hub A dies right after the vendor answered the
	// second run, before the job is finished.
	r.mu.Lock()
	r.onReply = func() { crashA() }
	r.mu.Unlock()
	r.up.Store(true)
	r.clk.Add(time.Minute) // the retry is due
	r.waitJob(t, job, "claimed again", func(j *jobs.Job) bool { return j.Attempts == 2 })
	<-ctxA.Done()
	// Hub A's worker is gone once its run returns: its run's events are
	// recorded by then, as the meter records them before the call
	// returns. Reading the ledger before that (on a loaded machine, run 3
	// could finish first) found run 2's events missing.
	if err := poolA.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.onReply = nil
	r.mu.Unlock()

	// Hub B's pool claims the job once A's lease has expired and finishes it.
	r.clk.Add(time.Minute)
	r.pool(t, context.Background(), 5)
	j := r.waitJob(t, job, "succeeded", func(j *jobs.Job) bool { return j.Status == jobs.Succeeded })
	if j.Attempts != 3 {
		t.Errorf("job attempts %d, want 3", j.Attempts)
	}
	r.mu.Lock()
	if r.calls[job] != 2 {
		t.Errorf("vendor got %d calls with the job's idempotency key, want 2 (%v)", r.calls[job], r.calls)
	}
	r.mu.Unlock()

	evs := r.events(t)
	got, total := summarize(evs, callID, job)
	// doubao: tenant 0.02 + 1 image × 0.04; payout 0.01 + 1 × 0.015.
	want := []summary{
		{"call", "call", "queued", 0, 0}, {"call", "attempt", "error", 0, 0},
		{"job", "call", "error", 0, 0}, {"job", "attempt", "error", 0, 0}, // run 1
		{"job", "call", "ok", 60_000, 0}, {"job", "attempt", "ok", 0, 25_000}, // run 2 (its worker died)
		{"job", "attempt", "ok", 0, 25_000}, // run 3: the vendor answered again; its call event is a duplicate
	}
	sortSummaries(want)
	sortSummaries(got)
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	if total != 60_000 {
		t.Errorf("tenant charged %v in all, want 0.060000 once", total)
	}
	if d := r.ledger.Stats().Duplicates; d != 1 {
		t.Errorf("ledger duplicates %d, want 1 (the repeated run's call event)", d)
	}
	for _, ev := range evs {
		switch {
		case ev.CallID == callID && ev.Kind == billing.KindCall:
			if ev.Reason != "queued as job "+job {
				t.Errorf("queued call's reason %q does not name the job", ev.Reason)
			}
		case ev.Kind == billing.KindCall && ev.TenantCost > 0:
			if ev.Key != billing.CallKey(job) {
				t.Errorf("charged event key %q, want %q", ev.Key, billing.CallKey(job))
			}
		}
	}
}

// TestJobThatFailsIsChargedNothing: a queued call whose job fails on every
// run costs the tenant nothing; every run is in the ledger under the job id.
func TestJobThatFailsIsChargedNothing(t *testing.T) {
	r := newJobRig(t)
	callID, job := r.queueCall(t)
	r.pool(t, context.Background(), 2)
	r.waitJob(t, job, "retried", func(j *jobs.Job) bool { return j.Status == jobs.Queued && j.Attempts == 1 })
	r.clk.Add(time.Minute)
	r.waitJob(t, job, "failed", func(j *jobs.Job) bool { return j.Status == jobs.Failed })
	got, total := summarize(r.events(t), callID, job)
	want := []summary{
		{"call", "call", "queued", 0, 0}, {"call", "attempt", "error", 0, 0},
		{"job", "call", "error", 0, 0}, {"job", "attempt", "error", 0, 0},
		{"job", "call", "error", 0, 0}, {"job", "attempt", "error", 0, 0},
	}
	sortSummaries(want)
	sortSummaries(got)
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	if total != 0 {
		t.Errorf("tenant charged %v for a failed job", total)
	}
}

func sortSummaries(s []summary) {
	slices.SortFunc(s, func(a, b summary) int {
		return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
}
