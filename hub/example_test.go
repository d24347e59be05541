package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// A capability backed by two vendors: the primary fails, the gateway
// falls back to the secondary, and the result's provenance says so. A
// call with arguments its schema refuses never reaches a vendor.
func ExampleGateway_Call() {
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	cat := registry.NewCatalog()
	cat.SetVendorTools("wx-a", []registry.ToolDef{{Name: "current", InputSchema: schema}})
	cat.SetVendorTools("wx-b", []registry.ToolDef{{Name: "current", InputSchema: schema}})
	cat.SetCapabilities([]registry.Capability{{
		Name: "weather.current", InputSchema: schema,
		Chain: []registry.ChainStep{{Tool: "wx-a/current"}, {Tool: "wx-b/current"}},
	}})

	// The vendors: wx-a is down, wx-b answers.
	vendors := map[string]hub.Invoker{
		"wx-a": hub.InvokerFunc(func(context.Context, *hub.Call) (*hub.Result, error) {
			return nil, &hub.Error{Code: hub.CodeUnavailable, Vendor: "wx-a", Message: "connection refused"}
		}),
		"wx-b": hub.InvokerFunc(func(_ context.Context, c *hub.Call) (*hub.Result, error) {
			return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("sunny in " + c.Arguments["city"].(string))}}, nil
		}),
	}
	// A middleware around each vendor attempt, as limits and breakers are.
	logAttempt := func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			res, err := next.Invoke(ctx, c)
			outcome := "ok"
			if err != nil {
				outcome = string(hub.CodeOf(err))
			}
			fmt.Printf("attempt %s: %s\n", c.Vendor(), outcome)
			return res, err
		})
	}
	gw := hub.NewGateway(cat, hub.UpstreamsFunc(func(v string) (hub.Invoker, bool) { inv, ok := vendors[v]; return inv, ok }),
		&hub.Options{Vendor: []hub.Middleware{logAttempt}})

	res, err := gw.Call(context.Background(), &hub.Call{Tenant: "acme", Name: "weather.current", Arguments: map[string]any{"city": "Paris"}})
	if err != nil {
		panic(err)
	}
	p := res.Provenance
	fmt.Println(res.Content[0].(mcp.TextContent).Text, "| vendor:", p.Vendor, "fallback:", p.Fallback, "attempts:", p.Attempts)

	_, err = gw.Call(context.Background(), &hub.Call{Tenant: "acme", Name: "wx-b__current", Arguments: map[string]any{"town": "Paris"}})
	var herr *hub.Error
	fmt.Println(errors.As(err, &herr), herr.Code)
	// Output:
	// attempt wx-a: unavailable
	// attempt wx-b: ok
	// sunny in Paris | vendor: wx-b fallback: true attempts: 2
	// true invalid_arguments
}
