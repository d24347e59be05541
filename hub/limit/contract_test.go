package limit_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/hub/limit/limittest"

	"github.com/toolhub/toolhub/internal/x/clocktest"
)

// fakeClock is a settable clock (internal/x/clocktest).
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock { return clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

func TestLocalContract(t *testing.T) {
	limittest.Run(t, func(t *testing.T) (limit.Limiter, func(time.Duration)) {
		c := newFakeClock()
		return limit.NewLocal(&limit.LocalOptions{Now: c.Now}), c.Advance
	})
}

// The fallback wrapper passes the contract on its local limits (one
// instance, so the same rule); hub/limit/redislimit runs it while Redis
// answers.
func TestFallbackContract(t *testing.T) {
	limittest.Run(t, func(t *testing.T) (limit.Limiter, func(time.Duration)) {
		c := newFakeClock()
		down := limit.LimiterFunc(func(context.Context, string, limit.Rule, int) (limit.Decision, error) {
			return limit.Decision{}, fmt.Errorf("dial tcp: connection refused")
		})
		return limit.NewFallback(down, &limit.FallbackOptions{Logger: slog.New(slog.DiscardHandler), Now: c.Now}), c.Advance
	})
}
