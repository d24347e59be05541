package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Capability is a logical tool with a canonical schema, backed by an ordered
// chain of vendor tools.
type Capability struct {
	Name         string          `json:"name" yaml:"name"` // e.g. "image.generate"
	Description  string          `json:"description,omitempty" yaml:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema" yaml:"-"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty" yaml:"-"`
	Chain        []ChainStep     `json:"chain" yaml:"chain"`
	// Keywords help the offline planner find the capability: words a user
	// may say for it, in any language (e.g. [天气, weather, forecast]).
	Keywords []string `json:"keywords,omitempty" yaml:"keywords,omitempty"`

	in, out *Schema
}

// ChainStep is one vendor tool of a capability's chain, with the mappings
// between the canonical shapes and the vendor's.
type ChainStep struct {
	// Tool is "vendor/tool" (the tool's own name at its vendor).
	Tool string `json:"tool" yaml:"tool"`
	// Args maps canonical arguments to the vendor's; unmapped fields pass unchanged.
	Args []Mapping `json:"args,omitempty" yaml:"args,omitempty"`
	// Result maps the vendor's structured result to the canonical one.
	Result []Mapping `json:"result,omitempty" yaml:"result,omitempty"`
}

// VendorTool splits Tool into vendor id and tool name.
func (s ChainStep) VendorTool() (vendor, tool string) {
	vendor, tool, _ = strings.Cut(s.Tool, "/")
	return vendor, tool
}

// CatalogName is the capability's function-calling-safe name.
func (c *Capability) CatalogName() string { return CapabilityCatalogName(c.Name) }

// ValidateInput checks arguments against the canonical input schema.
func (c *Capability) ValidateInput(args any) error {
	if args == nil {
		args = map[string]any{}
	}
	return c.in.Validate(args)
}

// ValidateOutput checks a canonical structured result.
func (c *Capability) ValidateOutput(v any) error {
	if c.out == nil {
		return nil
	}
	return c.out.Validate(v)
}

// InputSchemaCompiled returns the compiled canonical input schema.
func (c *Capability) InputSchemaCompiled() *Schema { return c.in }

// Compile validates the capability and compiles its schemas. It is called by
// the catalog; a capability that fails is not served.
func (c *Capability) Compile() error {
	if err := ValidateCapabilityName(c.Name); err != nil {
		return err
	}
	var errs []error
	if len(c.InputSchema) == 0 {
		c.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	var err error
	if c.in, err = CompileSchema(c.InputSchema); err != nil {
		errs = append(errs, fmt.Errorf("capability %q: input schema: %w", c.Name, err))
	}
	if len(c.OutputSchema) > 0 {
		if c.out, err = CompileSchema(c.OutputSchema); err != nil {
			errs = append(errs, fmt.Errorf("capability %q: output schema: %w", c.Name, err))
		}
	}
	if err := CheckKeywords(c.Keywords); err != nil {
		errs = append(errs, fmt.Errorf("capability %q: keywords: %w", c.Name, err))
	}
	if len(c.Chain) == 0 {
		errs = append(errs, fmt.Errorf("capability %q: chain is empty; list at least one vendor tool as \"vendor/tool\"", c.Name))
	}
	for i, s := range c.Chain {
		v, t := s.VendorTool()
		if ValidateVendorID(v) != nil || t == "" {
			errs = append(errs, fmt.Errorf("capability %q: chain[%d]: %q: want \"vendor/tool\"", c.Name, i, s.Tool))
		}
		for _, m := range append(append([]Mapping{}, s.Args...), s.Result...) {
			if err := m.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("capability %q: chain[%d]: %w", c.Name, i, err))
			}
		}
	}
	return errors.Join(errs...)
}
