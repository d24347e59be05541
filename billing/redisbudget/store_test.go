package redisbudget_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/budgettest"
	"github.com/toolhub/toolhub/billing/redisbudget"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

func TestContract(t *testing.T) {
	c := redistest.Client(t)
	budgettest.Run(t, func(t *testing.T) billing.BudgetStore {
		return redisbudget.New(c, &redisbudget.Options{Prefix: redistest.Prefix(t, c)})
	})
}

func TestTwoHubsShareABudget(t *testing.T) {
	c := redistest.Client(t)
	p := redistest.Prefix(t, c)
	a, b := redisbudget.New(c, &redisbudget.Options{Prefix: p}), redisbudget.New(redistest.Client(t), &redisbudget.Options{Prefix: p})
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
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr()})
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
