package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/retry"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// waitFor polls cond until it holds or 10s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling a condition, with a deadline
	}
}

func waitStatus(t testing.TB, s Store, id string, want Status) *Job {
	t.Helper()
	var j *Job
	waitFor(t, "job "+id+" to be "+string(want), func() bool {
		var err error
		j, err = s.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return j.Status == want
	})
	return j
}

func fastBackoff() retry.Policy {
	return retry.Policy{Base: time.Millisecond, Cap: 2 * time.Millisecond}
}

func startPool(t testing.TB, p *Pool) {
	t.Helper()
	if p.Logger == nil {
		p.Logger = quietLogger()
	}
	if p.Backoff.Base == 0 {
		p.Backoff = fastBackoff()
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(ctx)
	})
}

func textResult(s string) *hub.Result {
	return &hub.Result{Content: []mcp.Content{mcp.NewTextContent(s)}, Provenance: hub.Provenance{Vendor: "weather-a"}}
}

func TestPoolRunsAJob(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		q := NewQueue(open(t, nil), nil)
		var got *hub.Call
		var mu sync.Mutex
		startPool(t, &Pool{Store: q, Concurrency: 2, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			mu.Lock()
			got = c
			mu.Unlock()
			return textResult("sunny"), nil
		}})
		id, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "weather.current", Arguments: map[string]any{"city": "Paris"},
			Meta: map[string]any{"progressToken": "p1"}})
		if err != nil {
			t.Fatal(err)
		}
		j := waitStatus(t, q, id, Succeeded)
		var res ResultJSON
		if err := json.Unmarshal(j.Result, &res); err != nil {
			t.Fatal(err)
		}
		if string(res.Content) != `[{"type":"text","text":"sunny"}]` || res.Provenance.Vendor != "weather-a" {
			t.Errorf("result = %s", j.Result)
		}
		mu.Lock()
		defer mu.Unlock()
		want := &hub.Call{Tenant: "acme", Name: "weather.current", Arguments: map[string]any{"city": "Paris"},
			Meta: map[string]any{"progressToken": "p1", MetaJobID: id, MetaIdempotencyKey: id}}
		if d := cmp.Diff(want, got, cmp.AllowUnexported(hub.Call{})); d != "" {
			t.Errorf("call (-want +got):\n%s", d)
		}
		if j.KeepUntil.IsZero() {
			t.Errorf("no KeepUntil on a final job")
		}
	})
}

func TestPoolRetriesThenFails(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		q := NewQueue(open(t, nil), nil)
		var runs atomic.Int32
		startPool(t, &Pool{Store: q, MaxAttempts: 3, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			runs.Add(1)
			return nil, &hub.Error{Code: hub.CodeUnavailable, Message: "weather-a is down", Vendor: "weather-a"}
		}})
		id, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "weather.current"})
		if err != nil {
			t.Fatal(err)
		}
		j := waitStatus(t, q, id, Failed)
		if j.Attempts != 3 || runs.Load() != 3 {
			t.Errorf("attempts %d, runs %d; want 3", j.Attempts, runs.Load())
		}
		if want := "failed after 3 attempts: unavailable: weather-a is down"; j.LastError != want {
			t.Errorf("last error %q, want %q", j.LastError, want)
		}
		want := []Status{Queued, Running, Queued, Running, Queued, Running, Failed}
		if d := cmp.Diff(want, statuses(allEvents(t, q, "acme"), id)); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
	})
}

func TestPoolPermanentErrorFailsAtOnce(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		q := NewQueue(open(t, nil), nil)
		startPool(t, &Pool{Store: q, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			return nil, hub.Errorf(hub.CodeInvalidArguments, "/city: want string")
		}})
		id, _ := q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "weather.current"})
		j := waitStatus(t, q, id, Failed)
		if j.Attempts != 1 || !strings.Contains(j.LastError, "invalid_arguments") {
			t.Errorf("attempts %d, error %q", j.Attempts, j.LastError)
		}
	})
}

func succeededCount(t testing.TB, s Store, id string) int {
	n := 0
	for _, st := range statuses(allEvents(t, s, ""), id) {
		if st == Succeeded {
			n++
		}
	}
	return n
}

// TestPoolWorkerDies: a worker claims a job and dies before completing it;
// once its lease has expired another pool (another instance, for Redis)
// claims the job and completes it, once.
func TestPoolWorkerDies(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		qa := NewQueue(open(t, nil), nil)
		qb := NewQueue(open(t, nil), nil) // a second instance on the same data
		claimed := make(chan string, 1)
		deadCtx, die := context.WithCancel(ctx)
		dead := &Pool{Store: qa, Concurrency: 1, Lease: 300 * time.Millisecond, Logger: quietLogger(),
			Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
				claimed <- c.Meta[MetaJobID].(string)
				<-ctx.Done()
				return nil, ctx.Err()
			}}
		if err := dead.Start(deadCtx); err != nil {
			t.Fatal(err)
		}
		id, err := qa.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "image.generate"})
		if err != nil {
			t.Fatal(err)
		}
		if got := <-claimed; got != id {
			t.Fatalf("dead worker ran %s", got)
		}
		die() // the process dies mid-run
		dead.Stop(ctx)
		var runs atomic.Int32
		startPool(t, &Pool{Store: qb, Concurrency: 2, Lease: 300 * time.Millisecond,
			Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
				runs.Add(1)
				if c.Meta[MetaIdempotencyKey] != id {
					t.Errorf("idempotency key %v, want %s", c.Meta[MetaIdempotencyKey], id)
				}
				return textResult("a cat"), nil
			}})
		j := waitStatus(t, qb, id, Succeeded)
		if j.Attempts != 2 || runs.Load() != 1 || succeededCount(t, qb, id) != 1 {
			t.Errorf("attempts %d, runs %d, completions %d; want 2, 1, 1", j.Attempts, runs.Load(), succeededCount(t, qb, id))
		}
	})
}

// stuckStore pretends to renew leases: its worker looks alive to itself
// but not to the others (a long GC pause, a partition).
type stuckStore struct{ Store }

func (stuckStore) Renew(context.Context, string, string, time.Duration) error { return nil }

// TestPoolLateFinisher: a worker that lost its lease and finishes late
// cannot complete the job a second time.
func TestPoolLateFinisher(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		sa := open(t, nil)
		qb := NewQueue(open(t, nil), nil)
		claimed, release, lateDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
		lease := 200 * time.Millisecond
		late := &Pool{Store: stuckStore{sa}, Concurrency: 1, Lease: lease, Logger: quietLogger(), Backoff: fastBackoff(),
			Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
				close(claimed)
				<-release // ignores ctx: a stuck vendor call
				defer close(lateDone)
				return textResult("late"), nil
			}}
		if err := late.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer late.Stop(ctx)
		id, err := qb.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "image.generate"})
		if err != nil {
			t.Fatal(err)
		}
		<-claimed
		startPool(t, &Pool{Store: qb, Concurrency: 1, Lease: lease,
			Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return textResult("on time"), nil }})
		j := waitStatus(t, qb, id, Succeeded)
		close(release)
		<-lateDone
		late.Stop(ctx) // waits for the late worker's Finish attempt
		j2, _ := qb.Get(ctx, id)
		if string(j2.Result) != string(j.Result) || !strings.Contains(string(j2.Result), "on time") {
			t.Errorf("result changed by the late finisher: %s", j2.Result)
		}
		if n := succeededCount(t, qb, id); n != 1 {
			t.Errorf("%d completions, want 1", n)
		}
	})
}

// TestPoolGracefulStop: Stop lets the running job finish.
func TestPoolGracefulStop(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		q := NewQueue(open(t, nil), nil)
		started, release := make(chan struct{}), make(chan struct{})
		p := &Pool{Store: q, Concurrency: 1, Logger: quietLogger(), Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			close(started)
			<-release
			return textResult("ok"), nil
		}}
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		id, _ := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "t"})
		<-started
		stopped := make(chan error)
		go func() { stopped <- p.Stop(ctx) }()
		close(release)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if j, _ := q.Get(ctx, id); j.Status != Succeeded {
			t.Errorf("after a graceful stop the job is %s, want succeeded", j.Status)
		}
	})
}

func TestParkApproveReject(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		q := NewQueue(open(t, nil), nil)
		startPool(t, &Pool{Store: q, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return textResult("ok"), nil }})
		a, err := q.Park(ctx, &hub.Call{Tenant: "acme", Name: "t"}, "over budget: needs review")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := q.Park(ctx, &hub.Call{Tenant: "acme", Name: "t"}, "over budget")
		if j, _ := q.Get(ctx, a); j.Status != NeedsReview || j.LastError != "over budget: needs review" {
			t.Errorf("parked: %+v", j)
		}
		if _, err := q.Approve(ctx, a); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Reject(ctx, b, ""); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, q, a, Succeeded)
		if j, _ := q.Get(ctx, b); j.Status != Rejected {
			t.Errorf("rejected job is %s", j.Status)
		}
		if _, err := q.Approve(ctx, b); !errors.Is(err, ErrConflict) {
			t.Errorf("approving a rejected job: %v", err)
		}
	})
}

// TestEnqueueFromAJobRefused: a job's own call that finds no vendor is not
// queued again (the fallback chain runs inside the worker).
func TestEnqueueFromAJobRefused(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		q := NewQueue(open(t, nil), nil)
		innerErr := make(chan error, 1)
		startPool(t, &Pool{Store: q, MaxAttempts: 1, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			_, err := q.Enqueue(ctx, c) // what a fallback chain would do
			innerErr <- err
			return nil, err
		}})
		id, _ := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "t"})
		j := waitStatus(t, q, id, Failed)
		inner := <-innerErr
		if !errors.Is(inner, ErrAlreadyJob) || hub.CodeOf(inner) != hub.CodeUnavailable {
			t.Errorf("inner enqueue error = %v", inner)
		}
		if n := len(allEvents(t, q, "")); n != 3 {
			t.Errorf("%d events, want 3 (no second job): %s", n, j.LastError)
		}
	})
}

// TestPoolQueuedAnswerIsNotSuccess: a Run that answers "queued" has not
// answered the job.
func TestPoolQueuedAnswerIsNotSuccess(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		q := NewQueue(open(t, nil), nil)
		startPool(t, &Pool{Store: q, MaxAttempts: 2, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			return &hub.Result{Provenance: hub.Provenance{Queued: true, JobID: "job_other"}}, nil
		}})
		id, _ := q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "t"})
		j := waitStatus(t, q, id, Failed)
		if !strings.Contains(j.LastError, "queued again") || j.Attempts != 2 {
			t.Errorf("attempts %d, error %q", j.Attempts, j.LastError)
		}
	})
}

// TestPoolFinalToolErrorFailsAtOnce: a result whose tool error the vendor
// marked final fails the job at its first run, the vendor's answer kept as
// the job's result; a tool error not marked final is the job's answer.
func TestPoolFinalToolErrorFailsAtOnce(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		q := NewQueue(open(t, nil), nil)
		startPool(t, &Pool{Store: q, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			r := textResult("the prompt breaks the content policy")
			r.IsError, r.Final = true, c.Name == "final"
			r.Provenance.Vendor, r.Provenance.Tool = "doubao", "generate_image"
			return r, nil
		}})
		id, _ := q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "final"})
		j := waitStatus(t, q, id, Failed)
		if want := "doubao/generate_image answered with a tool error it marks final: the prompt breaks the content policy"; j.Attempts != 1 || j.LastError != want {
			t.Errorf("attempts %d, error %q; want 1, %q", j.Attempts, j.LastError, want)
		}
		if !strings.Contains(string(j.Result), `"isError":true`) || !strings.Contains(string(j.Result), "content policy") {
			t.Errorf("result %s; want the vendor's tool error", j.Result)
		}
		id, _ = q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "not-final"})
		if j := waitStatus(t, q, id, Succeeded); j.Attempts != 1 {
			t.Errorf("a tool error not marked final: attempts %d", j.Attempts)
		}
	})
}
