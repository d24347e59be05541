package redisjobs

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/jobs/jobstest"
	"github.com/toolhub/toolhub/hub/retry"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

func TestContract(t *testing.T) {
	jobstest.Run(t, func(t testing.TB) jobstest.Opener {
		c := redistest.Client(t)
		p := redistest.Prefix(t, c)
		return func(t testing.TB, now func() time.Time) jobs.Store {
			s, err := New(context.Background(), c, &Options{Prefix: p, Now: now, ReclaimIdle: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func instant(ctx context.Context, c *hub.Call) (*hub.Result, error) { return textResult("ok"), nil }

func textResult(s string) *hub.Result {
	return &hub.Result{Content: []mcp.Content{mcp.NewTextContent(s)}, Provenance: hub.Provenance{Vendor: "weather-a"}}
}

func breakerOpen(wait time.Duration) error {
	return &hub.Error{Code: hub.CodeCircuitOpen, Vendor: "doubao", RetryAfter: wait, Message: "vendor \"doubao\" is failing; its circuit is open"}
}

func startPool(t testing.TB, p *jobs.Pool) {
	t.Helper()
	if p.Logger == nil {
		p.Logger = quietLogger()
	}
	if p.Backoff.Base == 0 {
		p.Backoff = retry.Policy{Base: time.Millisecond, Cap: 2 * time.Millisecond}
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

// TestRedisReclaimsEveryJobOfADeadWorkerAtOnce: a worker that died holding
// several jobs leaves them all reclaimable together. XAUTOCLAIM resets the
// idle time of what it moves, so a Claim must move only the entry it runs:
// the others must not wait another idle period.
func TestRedisReclaimsEveryJobOfADeadWorkerAtOnce(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	clk := jobstest.NewClock()
	s, err := New(ctx, c, &Options{Prefix: redistest.Prefix(t, c), Now: clk.Now, ReclaimIdle: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	for range n {
		if err := s.Add(ctx, jobstest.NewJob("acme", "t", jobs.Queued, clk.Now())); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if j, err := s.Claim(ctx, "dead", 10*time.Second); err != nil || j == nil {
			t.Fatalf("Claim by dead = %v, %v", j, err)
		}
	}
	clk.Advance(11 * time.Second) // the dead worker's leases run out
	// Wait until every entry has sat idle long enough to be reclaimed.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		idle := 0
		for _, q := range s.streams() {
			pend, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: q, Group: redisGroup, Start: "-", End: "+", Count: 100}).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pend {
				if p.Idle >= 300*time.Millisecond {
					idle++
				}
			}
		}
		if idle == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d entries idle after 5s", idle, n)
		}
	}
	jobstest.ClaimWithin(t, s, "alive", 10*time.Second)
	// The rest are idle as long as the first was: claimable now, no wait.
	for i := 1; i < n; i++ {
		j, err := s.Claim(ctx, "alive", 10*time.Second)
		if err != nil || j == nil {
			t.Fatalf("reclaim %d of %d right after the first = %v, %v; want a job", i+1, n, j, err)
		}
	}
}

func TestRedisGracefulStopForgetsConsumers(t *testing.T) {
	c := redistest.Client(t)
	p := redistest.Prefix(t, c)
	s, err := New(context.Background(), c, &Options{Prefix: p})
	if err != nil {
		t.Fatal(err)
	}
	q := jobs.NewQueue(s, nil)
	pool := &jobs.Pool{Store: q, Concurrency: 2, Owner: "gone", Logger: quietLogger(), Run: instant}
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	id, _ := q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "t"})
	jobstest.WaitStatus(t, q, id, jobs.Succeeded)
	if err := pool.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, st := range s.streams() {
		cons, err := c.XInfoConsumers(context.Background(), st, redisGroup).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(cons) != 0 {
			t.Errorf("%s: consumers left after a graceful stop: %+v", st, cons)
		}
	}
}

// TestRedisWakeReachesEveryInstance: a wake on one instance wakes the
// idle workers of another at once (Redis pub/sub), not at their next poll.
func TestRedisWakeReachesEveryInstance(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	prefix := redistest.Prefix(t, c)
	open := func() *jobs.Queue {
		s, err := New(ctx, c, &Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		return jobs.NewQueue(s, nil)
	}
	qa, qb := open(), open()
	var down atomic.Bool
	down.Store(true)
	run := func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		if down.Load() {
			return nil, breakerOpen(time.Hour)
		}
		return textResult("a fox"), nil
	}
	// Instance b polls once an hour: only a wake can make it claim soon.
	pb := &jobs.Pool{Store: qb, Run: run, Poll: time.Hour}
	startPool(t, pb)
	id, err := qb.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "image.generate"})
	if err != nil {
		t.Fatal(err)
	}
	jobstest.WaitStatus(t, qb, id, jobs.Waiting)
	down.Store(false)
	if n, err := qa.Wake(ctx); err != nil || n != 1 { // instance a saw the vendor come back
		t.Fatalf("Wake = %d, %v", n, err)
	}
	jobstest.WaitStatus(t, qb, id, jobs.Succeeded)
}

// TestWakeRightAfterStart: once Start has returned, the pool is
// subscribed to other instances' wakes, so a wake made after Start is
// heard. Before, the subscription was made later on its own goroutine,
// and a wake in between waited for the pool's next poll (a busy machine
// showed it now and then in TestRedisWakeReachesEveryInstance). Here the
// subscription takes 1 s to reach Redis.
func TestWakeRightAfterStart(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	prefix := redistest.Prefix(t, c)
	slow := redis.NewClient(&redis.Options{Addr: redistest.Addr()})
	t.Cleanup(func() { slow.Close() })
	slow.AddHook(slowSubscribe(time.Second))
	run := func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return textResult("a fox"), nil }
	startPool(t, &jobs.Pool{Store: jobs.NewQueue(must(New(ctx, slow, &Options{Prefix: prefix})), nil), Run: run, Poll: time.Hour})
	subs, err := c.PubSubNumSub(ctx, prefix+"wake").Result()
	if err != nil {
		t.Fatal(err)
	}
	if subs[prefix+"wake"] != 1 {
		t.Fatalf("Start returned with %d subscribers to %swake; want the pool's one", subs[prefix+"wake"], prefix)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// slowSubscribe delays each SUBSCRIBE on its way to Redis.
type slowSubscribe time.Duration

func (d slowSubscribe) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := next(ctx, network, addr)
		return slowSubscribeConn{nc, time.Duration(d)}, err
	}
}

type slowSubscribeConn struct {
	net.Conn
	d time.Duration
}

func (c slowSubscribeConn) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("subscribe")) {
		time.Sleep(c.d) // a slow network, injected
	}
	return c.Conn.Write(b)
}

func (slowSubscribe) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (slowSubscribe) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// LaterGroups (a hub that knows Redis is away at start) leaves the
// consumer group to the first Claim.
func TestLaterGroups(t *testing.T) {
	ctx := t.Context()
	c := redistest.Client(t)
	p := redistest.Prefix(t, c)
	s, err := New(ctx, c, &Options{Prefix: p, LaterGroups: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, p+"q").Result(); err != nil || n != 0 {
		t.Fatalf("New with LaterGroups made the work stream: %d %v", n, err)
	}
	if _, err := s.Claim(ctx, "w", time.Minute); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	groups, err := c.XInfoGroups(ctx, p+"q").Result()
	if err != nil || len(groups) != 1 || groups[0].Name != redisGroup {
		t.Fatalf("after the first Claim: groups %v %v, want %q", groups, err, redisGroup)
	}
}
