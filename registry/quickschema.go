package registry

import (
	"math"
)

// quickNode is a schema in the small subset most tool schemas use — type,
// properties, required, additionalProperties, items, a string/boolean/null
// enum, and annotations — checked without the general validator's
// allocations. It only ever answers "valid": when ok is false the general
// validator decides (and words the error), so the subset can only make a
// valid document faster, never change a verdict. quickCompile returns nil
// for a schema with anything else in it.
type quickNode struct {
	types    uint8 // bit set of quickType*; 0 means any type
	props    map[string]*quickNode
	required []string
	closed   bool       // additionalProperties: false
	addl     *quickNode // additionalProperties: {schema}; nil means any
	items    *quickNode // nil means any
	enum     []any      // strings, booleans, nulls
	hasEnum  bool
}

const (
	quickObject uint8 = 1 << iota
	quickArray
	quickString
	quickNumber
	quickInteger
	quickBoolean
	quickNull
)

var quickTypes = map[string]uint8{
	"object": quickObject, "array": quickArray, "string": quickString, "number": quickNumber,
	"integer": quickInteger, "boolean": quickBoolean, "null": quickNull,
}

// quickDrafts are the $schema values whose meaning of the subset's
// keywords is the default draft's (2020-12).
var quickDrafts = map[string]bool{
	"https://json-schema.org/draft/2020-12/schema":  true,
	"https://json-schema.org/draft/2020-12/schema#": true,
	"https://json-schema.org/draft/2019-09/schema":  true,
	"https://json-schema.org/draft/2019-09/schema#": true,
	"http://json-schema.org/draft-07/schema":        true,
	"http://json-schema.org/draft-07/schema#":       true,
}

// quickCompile returns the quick checker of a decoded schema document, or
// nil when it uses anything outside the subset.
func quickCompile(doc any) *quickNode {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	if s, ok := m["$schema"]; ok {
		if s, _ := s.(string); !quickDrafts[s] {
			return nil
		}
	}
	return quickNodeOf(doc, true, 0)
}

func quickNodeOf(doc any, root bool, depth int) *quickNode {
	if depth > maxSchemaDepth {
		return nil
	}
	if b, ok := doc.(bool); ok {
		if b {
			return &quickNode{}
		}
		return nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	n := &quickNode{}
	for k, v := range m {
		switch k {
		case "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly":
			// annotations: no effect on validity
		case "$schema":
			if !root {
				return nil
			}
		case "type":
			if n.types, ok = quickTypeBits(v); !ok {
				return nil
			}
		case "properties":
			ps, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			n.props = make(map[string]*quickNode, len(ps))
			for name, p := range ps {
				pn := quickNodeOf(p, false, depth+1)
				if pn == nil {
					return nil
				}
				n.props[name] = pn
			}
		case "required":
			if n.required, ok = quickRequired(v); !ok {
				return nil
			}
		case "additionalProperties":
			switch a := v.(type) {
			case bool:
				n.closed = !a
			default:
				if n.addl = quickNodeOf(a, false, depth+1); n.addl == nil {
					return nil
				}
			}
		case "items":
			if n.items = quickNodeOf(v, false, depth+1); n.items == nil {
				return nil
			}
		case "enum":
			if n.enum, ok = quickEnum(v); !ok {
				return nil
			}
			n.hasEnum = true
		default:
			return nil
		}
	}
	return n
}

// quickTypeBits is the bit set of a "type" keyword: one type name or a
// non-empty list of them; false for anything else.
func quickTypeBits(v any) (uint8, bool) {
	switch t := v.(type) {
	case string:
		bit, ok := quickTypes[t]
		return bit, ok
	case []any:
		if len(t) == 0 {
			return 0, false
		}
		var bits uint8
		for _, e := range t {
			s, _ := e.(string)
			bit, ok := quickTypes[s]
			if !ok {
				return 0, false
			}
			bits |= bit
		}
		return bits, true
	}
	return 0, false
}

// quickRequired is a "required" keyword's names; false unless it is a list
// of strings.
func quickRequired(v any) ([]string, bool) {
	rs, ok := v.([]any)
	if !ok {
		return nil, false
	}
	var names []string
	for _, r := range rs {
		s, ok := r.(string)
		if !ok {
			return nil, false
		}
		names = append(names, s)
	}
	return names, true
}

// quickEnum is an "enum" keyword's values; false unless it is a list of
// strings, booleans and nulls.
func quickEnum(v any) ([]any, bool) {
	es, ok := v.([]any)
	if !ok {
		return nil, false
	}
	for _, e := range es {
		switch e.(type) {
		case string, bool, nil:
		default:
			return nil, false
		}
	}
	return es, true
}

// ok reports whether v is certainly valid. False means "ask the general
// validator": v may be invalid, or of a Go type the subset does not read.
func (n *quickNode) ok(v any) bool {
	if n.hasEnum {
		found := false
		for _, e := range n.enum {
			if quickEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	switch v := v.(type) {
	case map[string]any:
		if n.types != 0 && n.types&quickObject == 0 {
			return false
		}
		for _, r := range n.required {
			if _, ok := v[r]; !ok {
				return false
			}
		}
		for k, e := range v {
			if p, ok := n.props[k]; ok {
				if !p.ok(e) {
					return false
				}
				continue
			}
			if n.closed || (n.addl != nil && !n.addl.ok(e)) {
				return false
			}
		}
		return true
	case []any:
		if n.types != 0 && n.types&quickArray == 0 {
			return false
		}
		if n.items != nil {
			for _, e := range v {
				if !n.items.ok(e) {
					return false
				}
			}
		}
		return true
	case string:
		return n.types == 0 || n.types&quickString != 0
	case bool:
		return n.types == 0 || n.types&quickBoolean != 0
	case nil:
		return n.types == 0 || n.types&quickNull != 0
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return false
		}
		return n.types == 0 || n.types&quickNumber != 0 || (n.types&quickInteger != 0 && v == math.Trunc(v))
	case int, int64, int32:
		return n.types == 0 || n.types&(quickNumber|quickInteger) != 0
	}
	return false // json.Number and other Go types: the general validator reads them
}

// quickEqual compares an enum value (string, bool or nil) with v.
func quickEqual(e, v any) bool {
	switch e := e.(type) {
	case string:
		s, ok := v.(string)
		return ok && s == e
	case bool:
		b, ok := v.(bool)
		return ok && b == e
	case nil:
		return v == nil
	}
	return false
}
