package registry

import (
	"encoding/json"
	"fmt"
)

// ToolDef is a tool as a vendor describes it (MCP tools/list, or an A2A
// skill turned into a tool).
type ToolDef struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Tool is a registered vendor tool with compiled schemas. Tools are
// immutable once registered; a vendor's re-sync replaces them.
type Tool struct {
	Vendor  string // vendor id
	Catalog string // name in the catalog ("vendor__tool", maybe shortened)
	Def     ToolDef

	in  *Schema
	out *Schema // nil when the vendor gives no output schema
}

// Name is the tool's own name at its vendor.
func (t *Tool) Name() string { return t.Def.Name }

// InputSchema is the compiled input schema.
func (t *Tool) InputSchema() *Schema { return t.in }

// OutputSchema is the compiled output schema, or nil.
func (t *Tool) OutputSchema() *Schema { return t.out }

// ValidateInput checks call arguments against the input schema.
func (t *Tool) ValidateInput(args any) error {
	if args == nil {
		args = map[string]any{}
	}
	return t.in.Validate(args)
}

// ValidateOutput checks structured output against the output schema; a tool
// without one accepts anything.
func (t *Tool) ValidateOutput(v any) error {
	if t.out == nil {
		return nil
	}
	return t.out.Validate(v)
}

// ToolError is a tool rejected at registration, naming vendor, tool and the
// schema location at fault.
type ToolError struct {
	Vendor, Tool string
	Part         string // "input schema", "output schema", "name"
	Err          error
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("vendor %q: tool %q: %s: %v", e.Vendor, e.Tool, e.Part, e.Err)
}

func (e *ToolError) Unwrap() error { return e.Err }

// NewTool compiles a vendor's tool definition.
func NewTool(vendor string, def ToolDef) (*Tool, error) {
	if def.Name == "" {
		return nil, &ToolError{Vendor: vendor, Tool: def.Name, Part: "name", Err: fmt.Errorf("tool has no name")}
	}
	if err := CheckToolDef(vendor, def); err != nil {
		return nil, err
	}
	if len(def.InputSchema) == 0 {
		def.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	in, err := CompileSchema(def.InputSchema)
	if err != nil {
		return nil, &ToolError{Vendor: vendor, Tool: def.Name, Part: "input schema", Err: err}
	}
	t := &Tool{Vendor: vendor, Catalog: CatalogName(vendor, def.Name), Def: def, in: in}
	if len(def.OutputSchema) > 0 && string(def.OutputSchema) != "null" {
		if t.out, err = CompileSchema(def.OutputSchema); err != nil {
			return nil, &ToolError{Vendor: vendor, Tool: def.Name, Part: "output schema", Err: err}
		}
	}
	return t, nil
}
