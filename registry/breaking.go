package registry

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// BreakingChanges lists what callers would notice going from a vendor's
// old tools to its new ones: a tool removed; an argument removed, newly
// required or of another type; a result field removed or of another type.
// Added tools, optional arguments and result fields are not breaking.
func BreakingChanges(old, new []ToolDef) []string {
	byName := map[string]ToolDef{}
	for _, d := range new {
		byName[d.Name] = d
	}
	var out []string
	for _, o := range old {
		n, ok := byName[o.Name]
		if !ok {
			out = append(out, fmt.Sprintf("tool %q removed", o.Name))
			continue
		}
		oi, ni := shape(o.InputSchema), shape(n.InputSchema)
		out = lostProps(out, o.Name, "argument", oi, ni)
		for _, r := range ni.required {
			if !slices.Contains(oi.required, r) {
				out = append(out, fmt.Sprintf("tool %q: argument %q is now required", o.Name, r))
			}
		}
		if len(o.OutputSchema) > 0 {
			out = lostProps(out, o.Name, "result field", shape(o.OutputSchema), shape(n.OutputSchema))
		}
	}
	return out
}

// lostProps appends to out the properties (what a schema's properties are
// to callers: "argument", "result field") of tool's old schema that its new
// one removed or gave another type.
func lostProps(out []string, tool, what string, old, new schemaShape) []string {
	for _, p := range old.names() {
		switch nt, ok := new.props[p]; {
		case !ok:
			out = append(out, fmt.Sprintf("tool %q: %s %q removed", tool, what, p))
		case nt != old.props[p] && nt != "" && old.props[p] != "":
			out = append(out, fmt.Sprintf("tool %q: %s %q changed type from %s to %s", tool, what, p, old.props[p], nt))
		}
	}
	return out
}

type schemaShape struct {
	props    map[string]string // property → its "type" as JSON ("" when absent)
	required []string
}

func (s schemaShape) names() []string {
	n := make([]string, 0, len(s.props))
	for k := range s.props {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func shape(raw json.RawMessage) schemaShape {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(raw, &s)
	out := schemaShape{props: map[string]string{}, required: s.Required}
	for k, p := range s.Properties {
		out.props[k] = string(p.Type)
	}
	return out
}
