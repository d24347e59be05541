package limit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolhub/toolhub/internal/redistest"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func serverTime(t testing.TB, c *redis.Client) time.Time {
	t.Helper()
	tm, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return tm
}

func TestRedisKeysPrefixedWithTTL(t *testing.T) {
	c := redistest.Client(t)
	prefix := redistest.Prefix(t, c)
	l := NewRedis(c, &RedisOptions{Prefix: prefix})
	ctx := context.Background()
	if _, err := l.Allow(ctx, "vendor:weather", Rule{Rate: 10, Burst: 5}, 3); err != nil {
		t.Fatal(err)
	}
	// 3 tokens taken at 10/s: the bucket is full again, and the key gone, in 300ms.
	ttl, err := c.PTTL(ctx, prefix+"vendor:weather").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 200*time.Millisecond || ttl > 300*time.Millisecond {
		t.Errorf("PTTL = %v, want in (200ms, 300ms]", ttl)
	}
}

// Three processes' worth of limiters (separate clients) on one key admit the
// rule's rate between them, not three times it. GCRA admits at most
// burst + rate × elapsed; with the key hammered so it never sits full, it
// admits just that. Elapsed is measured on Redis's clock.
func TestRedisSharedByInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 3s of real time")
	}
	const (
		rate     = 200.0
		burst    = 20
		window   = 3 * time.Second
		workers  = 2 // per instance
		instance = 3
	)
	admin := redistest.Client(t)
	prefix := redistest.Prefix(t, admin)
	var limiters []*Redis
	for range instance {
		c := redis.NewClient(&redis.Options{Addr: redistest.Addr()})
		t.Cleanup(func() { c.Close() })
		limiters = append(limiters, NewRedis(c, &RedisOptions{Prefix: prefix}))
	}
	rule := Rule{Rate: rate, Burst: burst}
	ctx := context.Background()

	var admitted, calls atomic.Int64
	start := serverTime(t, admin)
	stop := time.Now().Add(window)
	var wg sync.WaitGroup
	for _, l := range limiters {
		for range workers {
			wg.Go(func() {
				for time.Now().Before(stop) {
					d, err := l.Allow(ctx, "shared", rule, 1)
					if err != nil {
						t.Error(err)
						return
					}
					calls.Add(1)
					if d.Allowed {
						admitted.Add(1)
					}
					time.Sleep(500 * time.Microsecond) // pace the callers; the key never sits full
				}
			})
		}
	}
	wg.Wait()
	elapsed := serverTime(t, admin).Sub(start)

	want := rate*elapsed.Seconds() + burst
	got := float64(admitted.Load())
	t.Logf("%d calls, %d admitted in %v (server time); expected %.1f", calls.Load(), admitted.Load(), elapsed, want)
	if got < want*0.98 || got > want*1.02 {
		t.Errorf("admitted %v, want %.1f ± 2%%", got, want)
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

// A client pointed at a closed port: calls keep flowing on local limits at
// rate/N, the transition is logged once, and the primary is tried at most
// once per probe interval, in the background.
func TestFallbackRedisDown(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { dead.Close() })
	var primaryCalls atomic.Int64
	primary := NewRedis(dead, nil)
	counted := LimiterFunc(func(ctx context.Context, key string, r Rule, n int) (Decision, error) {
		primaryCalls.Add(1)
		return primary.Allow(ctx, key, r, n)
	})
	var logs syncBuffer
	clock := newFakeClock()
	f := NewFallback(counted, &FallbackOptions{
		Instances: 3,
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		Now:       clock.Now,
	})
	ctx := context.Background()
	rule := Rule{Rate: 30, Burst: 9} // locally: 10/s, burst 3

	admittedAt := func(calls int) int {
		n := 0
		for range calls {
			d, err := f.Allow(ctx, "k", rule, 1)
			if err != nil {
				t.Fatalf("Allow during the outage: %v", err)
			}
			if d.Allowed {
				n++
			}
		}
		return n
	}
	if got := admittedAt(50); got != 3 {
		t.Errorf("first 50 calls admitted %d, want the local burst 3", got)
	}
	if !f.Degraded() {
		t.Error("Degraded() = false during the outage")
	}
	clock.Advance(500 * time.Millisecond) // 5 tokens at 10/s, capped at 3; no probe yet
	if got := admittedAt(50); got != 3 {
		t.Errorf("after 500ms: admitted %d, want 3", got)
	}
	if got := primaryCalls.Load(); got != 1 {
		t.Errorf("primary called %d times before the probe interval, want 1", got)
	}
	clock.Advance(600 * time.Millisecond) // past the probe interval: one background probe
	admittedAt(50)
	f.probes.Wait()
	if got := primaryCalls.Load(); got != 2 {
		t.Errorf("primary called %d times after one probe interval, want 2", got)
	}

	lines := logs.lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "connection refused") {
		t.Errorf("log = %q, want one warning naming the cause", lines)
	}
}

// A closed client is an outage too.
func TestFallbackClosedClient(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr()})
	c.Close()
	f := NewFallback(NewRedis(c, nil), &FallbackOptions{Logger: discardLogger()})
	d, err := f.Allow(context.Background(), "k", Rule{Rate: 1, Burst: 1}, 1)
	if err != nil || !d.Allowed || !f.Degraded() {
		t.Errorf("Allow on a closed client = %+v, %v (degraded %v), want admitted locally", d, err, f.Degraded())
	}
}

// The limiter itself reports an unreachable Redis as an error, never as a refusal.
func TestRedisUnreachableIsError(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { dead.Close() })
	_, err := NewRedis(dead, nil).Allow(context.Background(), "k", Rule{Rate: 1, Burst: 1}, 1)
	if err == nil || errors.Is(err, ErrRateLimited) {
		t.Errorf("err = %v, want a connection error", err)
	}
}
