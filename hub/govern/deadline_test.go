package govern_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/hub/retry"
	"github.com/toolhub/toolhub/registry"
)

// TestSyncRetriesFitTheDeadline: a tool whose 5s timeout is retryable
// used to take 4 × 5s plus backoff (22s) when the caller set no deadline.
// Now the call has one overall deadline (the hub's default for the tool,
// here 12s), and a retry starts only when it can finish inside it.
func TestSyncRetriesFitTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tries atomic.Int32
		hang := func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			tries.Add(1)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		ups := &upstreams{fns: map[string]hub.InvokerFunc{"weather-a": hang}}
		g := govern.New(&govern.Options{
			Logger:         slog.New(slog.NewJSONHandler(io.Discard, nil)),
			Retry:          retry.Policy{Rand: func() float64 { return 0.5 }}, // 3 retries, waits 0.5s, 1s, 2s
			AttemptTimeout: func(*registry.Tool) time.Duration { return 5 * time.Second },
		})
		gw := hub.NewGateway(catalog(t), ups, &hub.Options{
			DefaultTimeout: 5 * time.Second,
			Deadline:       func(registry.Entry) time.Duration { return 12 * time.Second },
			Vendor:         []hub.Middleware{g.VendorMiddleware()},
		})
		start := time.Now() // fake time: synctest's clock
		_, err := gw.Call(t.Context(), &hub.Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}})
		took := time.Since(start)
		if hub.CodeOf(err) != hub.CodeTimeout {
			t.Errorf("err = %v, want timeout", err)
		}
		// 0–5s, wait 0.5s, 5.5–10.5s; a third try would end at 16.5s.
		if took > 12*time.Second || tries.Load() != 2 {
			t.Errorf("took %v with %d tries; want 2 tries inside the 12s deadline", took, tries.Load())
		}
	})
}

// TestCallerDeadlineWins: the caller's own deadline, shorter or longer,
// replaces the hub's default.
func TestCallerDeadlineWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := func(ctx context.Context, c *hub.Call) (*hub.Result, error) { <-ctx.Done(); return nil, ctx.Err() }
		ups := &upstreams{fns: map[string]hub.InvokerFunc{"weather-a": hang}}
		gw := hub.NewGateway(catalog(t), ups, &hub.Options{
			DefaultTimeout: 5 * time.Second,
			Deadline:       func(registry.Entry) time.Duration { return 12 * time.Second },
		})
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := gw.Call(ctx, &hub.Call{Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}})
		if took := time.Since(start); took != 2*time.Second || hub.CodeOf(err) != hub.CodeTimeout {
			t.Errorf("took %v, err %v; want the caller's 2s and timeout", took, err)
		}
	})
}
