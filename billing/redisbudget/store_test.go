package redisbudget_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/budgettest"
	"github.com/toolhub/toolhub/billing/redisbudget"
	"github.com/toolhub/toolhub/hub"
)

const redisAddr = "127.0.0.1:6379"

func redisClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		t.Fatalf("redis at %s not reachable (%v): start it with `redis-server --daemonize yes --port 6379`", redisAddr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var seq atomic.Int64

// testPrefix returns a key prefix no other test uses; its keys are deleted when the test ends.
func testPrefix(t testing.TB, c *redis.Client) string {
	t.Helper()
	p := fmt.Sprintf("test:billing:%s:%d:%d:", t.Name(), time.Now().UnixNano(), seq.Add(1))
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, p+"*", 100).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return p
}

func TestContract(t *testing.T) {
	c := redisClient(t)
	budgettest.Run(t, func(t *testing.T) billing.BudgetStore {
		return redisbudget.New(c, &redisbudget.Options{Prefix: testPrefix(t, c)})
	})
}

func TestTwoHubsShareABudget(t *testing.T) {
	c := redisClient(t)
	p := testPrefix(t, c)
	a, b := redisbudget.New(c, &redisbudget.Options{Prefix: p}), redisbudget.New(redisClient(t), &redisbudget.Options{Prefix: p})
	ls := []billing.Line{{Key: "k", Limit: 3, TTL: time.Minute}}
	var ok int
	for _, s := range []billing.BudgetStore{a, b, a, b, a} {
		if _, pass, err := s.Reserve(t.Context(), ls, 1); err != nil {
			t.Fatal(err)
		} else if pass {
			ok++
		}
	}
	if ok != 3 {
		t.Errorf("%d reservations passed a shared budget of 3", ok)
	}
	ttl, err := c.PTTL(t.Context(), p+"k").Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("counter TTL = %v, %v; want ≤ 1m", ttl, err)
	}
}

// TestUnreachableStoreFailsClosed: with Redis gone, a budgeted call is
// refused (budget_exceeded), or let through with FailOpen.
func TestUnreachableStoreFailsClosed(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: redisAddr})
	c.Close()
	store := redisbudget.New(c, nil)
	rules := []billing.BudgetRule{{Tenant: "acme", Period: billing.PeriodDay, Limit: 1_000_000}}
	quiet := slog.New(slog.DiscardHandler)
	for _, failOpen := range []bool{false, true} {
		b, err := billing.NewBudgets(rules, &billing.BudgetOptions{Store: store, FailOpen: failOpen, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		inv := hub.Chain(hub.InvokerFunc(func(context.Context, *hub.Call) (*hub.Result, error) {
			return &hub.Result{}, nil
		}), b.Middleware())
		_, err = inv.Invoke(t.Context(), &hub.Call{ID: "c", Tenant: "acme", Tool: budgettest.VendorTool(t, "v", "t"), Trace: &hub.Trace{}})
		if got := hub.CodeOf(err); failOpen && err != nil || !failOpen && got != hub.CodeBudgetExceeded {
			t.Errorf("fail open %v: err %v", failOpen, err)
		}
	}
}
