package security

// Issue 36, item 3: the agent card of `make run` listed one skill,
// toolhub.plan: the card was built for an anonymous caller even where every
// caller is the default tenant. Without authentication it lists every
// capability; with authentication the public card lists what an anonymous
// caller may use and says there is an authenticated extended card, which
// a key gets over JSON-RPC (A2A 1.0 GetExtendedAgentCard; 0.3
// agent/getAuthenticatedExtendedCard) with its tenant's own skills.

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/examples/vendors"
)

func skillIDs(t *testing.T, body string, inResult bool) ([]string, map[string]any) {
	t.Helper()
	var card struct {
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
		Capabilities map[string]any `json:"capabilities"`
	}
	raw := []byte(body)
	if inResult {
		var rpc struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(raw, &rpc); err != nil || rpc.Result == nil {
			t.Fatalf("not a JSON-RPC result: %s", body)
		}
		raw = rpc.Result
	}
	if err := json.Unmarshal(raw, &card); err != nil {
		t.Fatalf("not a card: %v: %s", err, body)
	}
	var ids []string
	for _, s := range card.Skills {
		ids = append(ids, s.ID)
	}
	return ids, card.Capabilities
}

func TestAgentCardSkills(t *testing.T) {
	_, addr, closeVendors, err := vendors.ServeVendors(map[string]*vendors.Options{vendors.WeatherA: nil, vendors.Maps: nil})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeVendors)

	t.Run("no authentication", func(t *testing.T) {
		h := serve(t, `addr: 127.0.0.1:0
outbound: {allow: ["{{vendors}}"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "http://{{vendors}}/weather-a/mcp"}
  - id: maps
    mcp: {transport: http, url: "http://{{vendors}}/maps/mcp"}
capabilities:
  - name: weather.current
    input_schema: {type: object, required: [city], properties: {city: {type: string}}}
    chain: [{tool: weather-a/current_weather}]
  - name: route.plan
    input_schema: {type: object, required: [from, to], properties: {from: {type: string}, to: {type: string}}}
    chain: [{tool: maps/route}]
`, addr)
		h.waitReady("", "weather-a", "maps")
		st, body := h.req("", "GET", "/.well-known/agent-card.json", "", nil)
		ids, _ := skillIDs(t, body, false)
		if st != 200 || !slices.Contains(ids, "weather.current") || !slices.Contains(ids, "route.plan") {
			t.Errorf("the card without authentication: %d, skills %v; want every capability", st, ids)
		}
	})

	t.Run("authentication", func(t *testing.T) {
		h := serve(t, authConfig, addr)
		h.issue(map[string]auth.Key{
			"operator": {Role: auth.RoleOperator},
			"acme":     {Role: auth.RoleTenant, Tenant: "acme"},
		})
		h.waitReady("operator", "weather-a", "maps")
		_, body := h.req("", "GET", "/.well-known/agent-card.json", "", nil)
		public, caps := skillIDs(t, body, false)
		if slices.Contains(public, "weather.current") || caps["extendedAgentCard"] != true {
			t.Errorf("the public card: skills %v, capabilities %v; want no tenant's capability, and an extended card", public, caps)
		}
		for _, tc := range []struct{ version, method string }{{"1.0", "GetExtendedAgentCard"}, {"0.3", "agent/getAuthenticatedExtendedCard"}} {
			st, body := h.req("acme", "POST", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"`+tc.method+`","params":{}}`, map[string]string{"A2A-Version": tc.version})
			own, _ := skillIDs(t, body, true)
			if st != 200 || !slices.Contains(own, "weather.current") {
				t.Errorf("acme's extended card (%s %s): %d, skills %v", tc.version, tc.method, st, own)
			}
		}
		if st, body := h.req("", "POST", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard","params":{}}`, map[string]string{"A2A-Version": "1.0"}); st != 401 {
			t.Errorf("an anonymous extended card: %d %s", st, body)
		}
	})
}
