package registry

import (
	"encoding/json"
)

// FunctionTool is one entry of an OpenAI chat-completions "tools" array.
type FunctionTool struct {
	Type     string   `json:"type"` // always "function"
	Function Function `json:"function"`
}

// Function is a function-calling spec.
type Function struct {
	Name        string          `json:"name"` // a catalog name: ^[a-zA-Z0-9_-]{1,64}$
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// maxDescription keeps function specs small for the model.
const maxDescription = 1024

// FunctionSpecs renders entries as function-calling specs, capabilities
// first, then vendor tools, each group in the given order. Every name is a
// catalog name, so a model's tool call resolves with [Catalog.Lookup].
func FunctionSpecs(entries []Entry) []FunctionTool {
	out := make([]FunctionTool, 0, len(entries))
	for _, capFirst := range []bool{true, false} {
		for _, e := range entries {
			if (e.Capability != nil) != capFirst {
				continue
			}
			out = append(out, FunctionSpec(e))
		}
	}
	return out
}

// FunctionSpec renders one entry.
func FunctionSpec(e Entry) FunctionTool {
	var desc string
	var params json.RawMessage
	if c := e.Capability; c != nil {
		desc, params = c.Description, c.InputSchema
	} else {
		desc, params = e.Tool.Def.Description, e.Tool.Def.InputSchema
		if desc == "" {
			desc = e.Tool.Def.Title
		}
	}
	if len(desc) > maxDescription {
		desc = desc[:maxDescription]
	}
	return FunctionTool{Type: "function", Function: Function{Name: e.Name, Description: desc, Parameters: params}}
}

// Entries lists the catalog's entries (capabilities, then vendor tools),
// keeping those keep accepts (nil keeps all).
func (c *Catalog) Entries(keep func(Entry) bool) []Entry {
	s := c.snap.Load()
	out := make([]Entry, 0, s.byName.Len())
	for _, cp := range s.caps {
		e, _ := s.byName.Get(cp.CatalogName())
		if keep == nil || keep(e) {
			out = append(out, e)
		}
	}
	for _, t := range c.Tools() {
		e := Entry{Name: t.Catalog, Tool: t}
		if keep == nil || keep(e) {
			out = append(out, e)
		}
	}
	return out
}
