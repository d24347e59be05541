package config

import (
	"strings"
	"testing"
)

func TestDefaultConfigIsValid(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Examples == nil || len(c.Vendors) != 6 || len(c.Capabilities) != 4 {
		t.Errorf("default config: examples=%v vendors=%d capabilities=%d", c.Examples, len(c.Vendors), len(c.Capabilities))
	}
}

// Planner keywords reach the registry: on capabilities and, by tool, on vendors.
func TestKeywords(t *testing.T) {
	c, err := Parse([]byte(`
vendors: [{id: a, mcp: {transport: stdio, command: x}, keywords: {x: [画, draw]}}]
capabilities: [{name: a.b, keywords: [天气, weather], chain: [{tool: a/x}]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	caps, err := c.RegistryCapabilities()
	if err != nil || len(caps) != 1 || strings.Join(caps[0].Keywords, ",") != "天气,weather" {
		t.Errorf("capability keywords: %v %+v", err, caps)
	}
	if got := c.Vendors[0].Keywords["x"]; strings.Join(got, ",") != "画,draw" {
		t.Errorf("vendor keywords %v", got)
	}
	d, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range d.Capabilities {
		if len(cp.Keywords) == 0 {
			t.Errorf("default capability %s has no planner keywords", cp.Name)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown key", "adr: x", "field adr not found"},
		{"bad vendor", "vendors: [{id: Bad_Id, mcp: {transport: stdio, command: x}}]", "vendors[0]: vendor id"},
		{"duplicate vendor", "vendors: [{id: a, mcp: {transport: stdio, command: x}}, {id: a, mcp: {transport: stdio, command: x}}]", "declared twice"},
		{"chain to undeclared vendor", "capabilities: [{name: a.b, chain: [{tool: nope/x}]}]", `vendor "nope" is not declared`},
		{"bad duration", "timeout: 5", "duration"},
		{"empty file", "", "config is empty"},
		{"only comments", "# nothing here\n\n", "config is empty"},
		{"null document", "~", "config is empty"},
		{"empty mapping", "{}", "config is empty"},
		{"bad budget", "billing: {budgets: [{tenant: acme, period: week, limit: \"1\"}]}", `period "week"`},
		{"bad meter sync", "meter: {sync: sometimes}", `meter sync "sometimes": want batch or always`},
		{"bad keywords", "vendors: [{id: a, mcp: {transport: stdio, command: x}}]\ncapabilities: [{name: a.b, keywords: [\"\"], chain: [{tool: a/x}]}]", `capability "a.b": keywords: keyword ""`},
		{"bad vendor keywords", "vendors: [{id: a, mcp: {transport: stdio, command: x}, keywords: {x: [\"\"]}}]", `vendors[0]: vendor "a": keywords: tool "x"`},
		{"bad always pattern", "catalog: {search_tool: true, always: [\"weather_[\"]}", `catalog.always: "weather_["`},
		{"bad schema", "vendors: [{id: a, mcp: {transport: stdio, command: x}}]\ncapabilities: [{name: a.b, input_schema: {type: integr}, chain: [{tool: a/x}]}]", "input schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestMeterSync reads meter.sync: batch by default, always when asked.
func TestMeterSync(t *testing.T) {
	for yaml, want := range map[string]string{"addr: 127.0.0.1:0": "", "meter: {sync: always}": "always", "meter: {sync: batch}": "batch"} {
		c, err := Parse([]byte(yaml))
		if err != nil {
			t.Fatalf("%s: %v", yaml, err)
		}
		if c.Meter.Sync != want {
			t.Errorf("%s: meter.sync = %q, want %q", yaml, c.Meter.Sync, want)
		}
	}
}
