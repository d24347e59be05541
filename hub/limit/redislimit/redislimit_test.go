package redislimit

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/hub/limit/limittest"
	"github.com/toolhub/toolhub/internal/x/redistest"
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
	l := New(c, &Options{Prefix: prefix})
	ctx := context.Background()
	if _, err := l.Allow(ctx, "vendor:weather", limit.Rule{Rate: 10, Burst: 5}, 3); err != nil {
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
	var limiters []*Limiter
	for range instance {
		c := redis.NewClient(&redis.Options{Addr: redistest.Addr()})
		t.Cleanup(func() { c.Close() })
		limiters = append(limiters, New(c, &Options{Prefix: prefix}))
	}
	rule := limit.Rule{Rate: rate, Burst: burst}
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

// A closed client is an outage too.
func TestFallbackClosedClient(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr()})
	c.Close()
	f := limit.NewFallback(New(c, nil), &limit.FallbackOptions{Logger: discardLogger()})
	d, err := f.Allow(context.Background(), "k", limit.Rule{Rate: 1, Burst: 1}, 1)
	if err != nil || !d.Allowed || !f.Degraded() {
		t.Errorf("Allow on a closed client = %+v, %v (degraded %v), want admitted locally", d, err, f.Degraded())
	}
}

// The limiter itself reports an unreachable Redis as an error, never as a refusal.
func TestRedisUnreachableIsError(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { dead.Close() })
	_, err := New(dead, nil).Allow(context.Background(), "k", limit.Rule{Rate: 1, Burst: 1}, 1)
	if err == nil || errors.Is(err, limit.ErrRateLimited) {
		t.Errorf("err = %v, want a connection error", err)
	}
}

func TestContract(t *testing.T) {
	client := redistest.Client(t)
	limittest.Run(t, func(t *testing.T) (limit.Limiter, func(time.Duration)) {
		l := New(client, &Options{Prefix: redistest.Prefix(t, client)})
		// Redis's clock cannot be set; the test-only offset moves this limiter's view of it.
		return l, func(d time.Duration) { l.offset.Add(d.Microseconds()) }
	})
}

// The fallback wrapper passes the contract while Redis answers.
func TestFallbackContract(t *testing.T) {
	client := redistest.Client(t)
	limittest.Run(t, func(t *testing.T) (limit.Limiter, func(time.Duration)) {
		r := New(client, &Options{Prefix: redistest.Prefix(t, client)})
		return limit.NewFallback(r, &limit.FallbackOptions{Logger: discardLogger()}), func(d time.Duration) { r.offset.Add(d.Microseconds()) }
	})
}
