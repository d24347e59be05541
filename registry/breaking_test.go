package registry

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBreakingChanges(t *testing.T) {
	def := func(name, in, out string) ToolDef {
		d := ToolDef{Name: name, InputSchema: json.RawMessage(in)}
		if out != "" {
			d.OutputSchema = json.RawMessage(out)
		}
		return d
	}
	old := []ToolDef{
		def("weather", `{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"days":{"type":"integer"}}}`, `{"type":"object","properties":{"temp":{"type":"number"},"wind":{"type":"number"}}}`),
		def("gone", `{"type":"object"}`, ""),
	}
	tests := []struct {
		name string
		new  []ToolDef
		want []string
	}{
		{"compatible: optional argument and new tool added", []ToolDef{
			def("weather", `{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"days":{"type":"integer"},"lang":{"type":"string"}}}`, `{"type":"object","properties":{"temp":{"type":"number"},"wind":{"type":"number"},"uv":{"type":"number"}}}`),
			def("gone", `{"type":"object"}`, ""), def("extra", `{"type":"object"}`, ""),
		}, nil},
		{"breaking", []ToolDef{
			def("weather", `{"type":"object","required":["city","country"],"properties":{"city":{"type":"string"},"days":{"type":"string"},"country":{"type":"string"}}}`, `{"type":"object","properties":{"temp":{"type":"number"}}}`),
		}, []string{
			`tool "weather": argument "days" changed type from "integer" to "string"`,
			`tool "weather": argument "country" is now required`,
			`tool "weather": result field "wind" removed`,
			`tool "gone" removed`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, BreakingChanges(old, tt.new)); diff != "" {
				t.Error(diff)
			}
		})
	}
}
