package billing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// Money is exact: decimal strings in, int64 millionths inside.
func ExampleParseMicros() {
	price, _ := billing.ParseMicros("0.0025")
	fmt.Println(int64(price), price, price*3)
	// Output:
	// 2500 0.002500 0.007500
}

// A hard budget stops spending: each call reserves its price before it
// reaches the vendor, and a call that would go over is refused.
func ExampleBudgets_Middleware() {
	now := func() time.Time { return time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC) }
	mustMicros := func(s string) billing.Micros { m, _ := billing.ParseMicros(s); return m }
	book, err := billing.NewPriceBook(billing.Config{Prices: []billing.VersionConfig{{
		Version: "2026-12", Effective: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Entries: []billing.PriceEntry{{Vendor: "weather-a", Tenant: billing.Rate{PerCall: mustMicros("0.40")}}},
	}}})
	if err != nil {
		panic(err)
	}
	pricer := billing.NewPricer(book, nil)
	budgets, err := billing.NewBudgets([]billing.BudgetRule{{Tenant: "acme", Period: "day", Limit: mustMicros("1.00")}},
		&billing.BudgetOptions{Pricer: pricer, Now: now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}

	cat := registry.NewCatalog()
	cat.SetVendorTools("weather-a", []registry.ToolDef{{Name: "current", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	vendor := hub.InvokerFunc(func(context.Context, *hub.Call) (*hub.Result, error) {
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("sunny")}}, nil
	})
	gw := hub.NewGateway(cat, hub.UpstreamsFunc(func(string) (hub.Invoker, bool) { return vendor, true }),
		&hub.Options{Now: now, Call: []hub.Middleware{budgets.Middleware()}})

	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		_, err := gw.Call(ctx, &hub.Call{Tenant: "acme", Name: "weather-a__current"})
		if err != nil {
			fmt.Printf("call %d: %s\n", i, hub.CodeOf(err))
			continue
		}
		fmt.Printf("call %d: ok\n", i)
	}
	spent, _ := budgets.Spent(ctx, "acme", "", "day", now())
	fmt.Println("spent today:", spent)
	// Output:
	// call 1: ok
	// call 2: ok
	// call 3: budget_exceeded
	// spent today: 0.800000
}
