package billing_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// retryOnce is a Vendor-tier middleware that tries an attempt twice, like
// the governor's retries: c.Attempt counts the tries.
func retryOnce(next hub.Invoker) hub.Invoker {
	return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		c.Attempt = 1
		r, err := next.Invoke(ctx, c)
		if err == nil {
			return r, nil
		}
		c.Attempt = 2
		return next.Invoke(ctx, c)
	})
}

// TestAttemptIntentsResolveThroughGateway runs calls with retries and a
// capability fallback through a real gateway with the meter's two
// middlewares: every intent is resolved by its attempt's event (same key),
// so a restart finds nothing unknown and the ledger has one event per try.
func TestAttemptIntentsResolveThroughGateway(t *testing.T) {
	ctx := context.Background()
	cat := registry.NewCatalog()
	in := json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}}}`)
	for v, name := range map[string]string{"doubao": "generate_image", "sd": "txt2img"} {
		if errs := cat.SetVendorTools(v, []registry.ToolDef{{Name: name, InputSchema: in}}); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	if errs := cat.SetCapabilities([]registry.Capability{{Name: "image.generate", InputSchema: in,
		Chain: []registry.ChainStep{{Tool: "doubao/generate_image"}, {Tool: "sd/txt2img"}}}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	dir := t.TempDir()
	spill := dir + "/spill"
	l := openLedger(t, dir)
	m := newMeter(t, l, &billing.MeterOptions{Pricer: billing.NewPricer(book(t), nil), SpillDir: spill})
	doubaoFails := 0
	var openDuring []int64
	gw := hub.NewGateway(cat, upstreams{
		"doubao": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			openDuring = append(openDuring, m.Stats().Open)
			if doubaoFails > 0 {
				doubaoFails--
				return nil, hub.Errorf(hub.CodeUnavailable, "doubao is down")
			}
			return &hub.Result{Structured: map[string]any{"images": 1.0}}, nil
		},
		"sd": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			openDuring = append(openDuring, m.Stats().Open)
			return &hub.Result{Structured: map[string]any{"images": 2.0}}, nil
		},
	}, &hub.Options{Outer: []hub.Middleware{m.Middleware()}, Vendor: []hub.Middleware{retryOnce, m.AttemptMiddleware()}, Logger: quiet})

	// 1 try; 2 tries (a retry); 3 tries (two at doubao, then sd).
	wantTries := 0
	for i, fails := range []int{0, 1, 2} {
		doubaoFails = fails
		if _, err := gw.Call(ctx, &hub.Call{Tenant: "acme", Name: "image.generate", Arguments: map[string]any{"prompt": "a cat"}}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		wantTries += fails + 1
	}
	if s := m.Stats(); s.Open != 0 {
		t.Errorf("%d intents still open after the calls ended", s.Open)
	}
	// A call's intents are resolved when it ends: its k-th try sees k open.
	if diff := cmp.Diff([]int64{1, 1, 2, 1, 2, 3}, openDuring); diff != "" {
		t.Errorf("intents open at each try (-want +got):\n%s", diff)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := newMeter(t, l, &billing.MeterOptions{SpillDir: spill})
	if s := m2.Stats(); s.Unknown != 0 {
		t.Errorf("a restart found %d unknown attempts, want 0", s.Unknown)
	}
	var attempts int
	l.Query(ctx, billing.Filter{Kind: billing.KindAttempt}, func(e billing.Event) error {
		attempts++
		if e.Outcome == billing.OutcomeUnknown {
			t.Errorf("unknown attempt %s", e.Key)
		}
		return nil
	})
	if attempts != wantTries {
		t.Errorf("%d attempt events, want %d", attempts, wantTries)
	}
}
