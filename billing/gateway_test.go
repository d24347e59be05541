package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

type upstreams map[string]hub.InvokerFunc

func (u upstreams) Upstream(id string) (hub.Invoker, bool) {
	f, ok := u[id]
	return f, ok
}

// TestThroughGateway wires the meter (Outer) and budgets (Call) into a real
// hub.Gateway with a capability whose primary vendor fails, and checks the
// ledger's rollup.
func TestThroughGateway(t *testing.T) {
	ctx := context.Background()
	cat := registry.NewCatalog()
	in := json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}}}`)
	for _, v := range []string{"doubao", "sd"} {
		name := map[string]string{"doubao": "generate_image", "sd": "txt2img"}[v]
		if errs := cat.SetVendorTools(v, []registry.ToolDef{{Name: name, InputSchema: in}}); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	if errs := cat.SetCapabilities([]registry.Capability{{Name: "image.generate", InputSchema: in,
		Chain: []registry.ChainStep{{Tool: "doubao/generate_image"}, {Tool: "sd/txt2img"}}}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return at }
	pricer := billing.NewPricer(book(t), nil)
	l := openLedger(t, t.TempDir())
	m := newMeter(t, l, &billing.MeterOptions{Pricer: pricer, Now: now})
	b, err := billing.NewBudgets([]billing.BudgetRule{{Tenant: "acme", Period: billing.PeriodDay, Limit: 500_000}},
		&billing.BudgetOptions{Pricer: pricer, Now: now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	doubaoUp := true
	gw := hub.NewGateway(cat, upstreams{
		"doubao": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			if !doubaoUp {
				return nil, hub.Errorf(hub.CodeUnavailable, "doubao is down")
			}
			return &hub.Result{Structured: map[string]any{"images": 1.0}}, nil
		},
		"sd": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			return &hub.Result{Structured: map[string]any{"images": 2.0}}, nil
		},
	}, &hub.Options{Outer: []hub.Middleware{m.Middleware()}, Call: []hub.Middleware{b.Middleware()}, Now: now, Logger: quiet})

	call := func(name string) error {
		_, err := gw.Call(ctx, &hub.Call{Tenant: "acme", Name: name, Arguments: map[string]any{"prompt": "a cat"}})
		return err
	}
	// doubao answers: 0.02 + 0.04 = 0.06 charged, 0.01 + 0.015 paid.
	if err := call("image.generate"); err != nil {
		t.Fatal(err)
	}
	// doubao down, sd answers: 0.02 + 2 × 0.04 = 0.10 charged; sd paid 0.002.
	doubaoUp = false
	if err := call("image.generate"); err != nil {
		t.Fatal(err)
	}
	// An unknown tool is recorded as rejected, and costs nothing.
	if err := call("nope"); hub.CodeOf(err) != hub.CodeUnknownTool {
		t.Fatalf("unknown tool: %v", err)
	}
	// Spent 0.16 of 0.50; the estimate is 0.18: two more calls pass
	// (0.26, 0.36 settled), the next would reach 0.36 + 0.18 > 0.50.
	for range 2 {
		if err := call("image.generate"); err != nil {
			t.Fatal(err)
		}
	}
	var he *hub.Error
	if err := call("image.generate"); !errors.As(err, &he) || he.Code != hub.CodeBudgetExceeded {
		t.Fatalf("over budget: %v", err)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := l.Rollup(ctx, billing.RollupQuery{GroupBy: []string{"vendor"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []billing.Row{
		{Currency: "USD", Calls: 2, Rejected: 2}, // unknown tool, over budget: no vendor
		{Vendor: "doubao", Currency: "USD", Calls: 1, Attempts: 4, Paid: 1, Images: 1, TenantCost: 60_000, VendorCost: 25_000},
		{Vendor: "sd", Currency: "USD", Calls: 3, Attempts: 3, Paid: 3, Images: 6, TenantCost: 300_000, VendorCost: 6_000},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rollup by vendor (-want +got):\n%s", diff)
	}
	if spent, _ := b.Spent(ctx, "acme", "", billing.PeriodDay, at); spent != 360_000 {
		t.Errorf("spent %v, want 0.360000", spent)
	}
}
