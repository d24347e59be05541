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
