package registry

import (
	"fmt"
	"strconv"
	"strings"
)

// Mapping moves the value at JSON pointer From to JSON pointer To
// ("/city" → "/location", "/size" → "/options/size"). A missing From is
// skipped, so optional fields need no special case.
type Mapping struct {
	From string `json:"from" yaml:"from"`
	To   string `json:"to" yaml:"to"`
}

// Validate checks both pointers.
func (m Mapping) Validate() error {
	for _, p := range []string{m.From, m.To} {
		if _, err := splitPointer(p); err != nil {
			return err
		}
	}
	if m.From == "" || m.To == "" {
		return fmt.Errorf("mapping %q → %q: both ends must name a field", m.From, m.To)
	}
	return nil
}

// ApplyMappings returns a copy of doc with every mapping applied in order.
// doc is a decoded JSON object; the input is never modified.
func ApplyMappings(doc map[string]any, maps []Mapping) (map[string]any, error) {
	out, _ := deepCopy(doc).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	for _, m := range maps {
		from, err := splitPointer(m.From)
		if err != nil {
			return nil, err
		}
		to, err := splitPointer(m.To)
		if err != nil {
			return nil, err
		}
		v, ok := take(out, from)
		if !ok {
			continue
		}
		if err := put(out, to, v); err != nil {
			return nil, fmt.Errorf("mapping %q → %q: %w", m.From, m.To, err)
		}
	}
	return out, nil
}

func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("json pointer %q must start with '/'", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// take removes and returns the value at path.
func take(doc map[string]any, path []string) (any, bool) {
	if len(path) == 0 {
		return nil, false
	}
	var cur any = doc
	for _, k := range path[:len(path)-1] {
		cur = child(cur, k)
		if cur == nil {
			return nil, false
		}
	}
	last := path[len(path)-1]
	switch c := cur.(type) {
	case map[string]any:
		v, ok := c[last]
		delete(c, last)
		return v, ok
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(c) {
			return nil, false
		}
		return c[i], true // arrays keep their length: the element is copied, not removed
	}
	return nil, false
}

func child(cur any, k string) any {
	switch c := cur.(type) {
	case map[string]any:
		return c[k]
	case []any:
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(c) {
			return nil
		}
		return c[i]
	}
	return nil
}

// put sets the value at path, creating objects on the way.
func put(doc map[string]any, path []string, v any) error {
	if len(path) == 0 {
		return fmt.Errorf("cannot replace the whole document")
	}
	cur := doc
	for _, k := range path[:len(path)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			if _, exists := cur[k]; exists {
				return fmt.Errorf("%q is not an object", k)
			}
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	cur[path[len(path)-1]] = v
	return nil
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}
