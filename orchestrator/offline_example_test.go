package orchestrator_test

import (
	"encoding/json"
	"fmt"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/orchestrator"
	"github.com/toolhub/toolhub/registry"
)

// The offline planner reads goals against whatever the catalog holds: here
// one capability with Chinese keywords and one vendor tool.
func ExamplePlanner_PlanOffline() {
	cat := registry.NewCatalog()
	cat.SetVendorTools("calc", []registry.ToolDef{{
		Name: "get-sum", Description: "Returns the sum of two numbers",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
	}})
	cat.SetCapabilities([]registry.Capability{{
		Name: "weather.current", Description: "Current weather for a city.", Keywords: []string{"天气", "forecast"},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		Chain:       []registry.ChainStep{{Tool: "wx/current_weather"}},
	}})
	p := &orchestrator.Planner{Gateway: hub.NewGateway(cat, hub.UpstreamsFunc(func(string) (hub.Invoker, bool) { return nil, false }), nil), Catalog: cat}
	for _, goal := range []string{"北京明天天气怎么样，顺便把3和5加起来", "book a flight to Tokyo"} {
		plan, unplanned := p.PlanOffline("default", goal)
		for _, s := range plan.Steps {
			args, _ := json.Marshal(s.Arguments)
			fmt.Println(s.ID, s.Tool, string(args), s.DependsOn)
		}
		for _, u := range unplanned {
			fmt.Printf("not planned: %q (%s)\n", u.Clause, u.Reason)
		}
	}
	// Output:
	// weather_current weather_current {"city":"北京"} []
	// calc__get-sum calc__get-sum {"a":3,"b":5} []
	// integrate integrate null [weather_current calc__get-sum]
	// not planned: "book a flight to Tokyo" (no_match)
}
