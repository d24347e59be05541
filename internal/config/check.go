package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong in a config file, at a line (0 when no line
// of the file can be blamed).
type Problem struct {
	File    string
	Line    int
	Message string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return p.File + ": " + p.Message
}

// CheckFile reads and checks a config file, like `nginx -t`: every problem
// it finds, each at its line. path "" checks the embedded default. No
// problems means `toolhub serve --config path` starts with it.
func CheckFile(path string) []Problem {
	data, name := defaultYAML, "embedded default config"
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return []Problem{{File: path, Message: err.Error()}}
		}
		data, name = b, path
	}
	return Check(name, data)
}

// Check checks config text; file names it in the problems. It reports, in
// order of line: YAML syntax, unknown keys (with the keys known there),
// values of the wrong type, durations and amounts that do not parse, then
// what [Config.Validate] refuses, each at the line of the key it is about.
func Check(file string, data []byte) []Problem {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return []Problem{syntaxProblem(file, err)}
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	var out []Problem
	add := func(line int, msg string) { out = append(out, Problem{File: file, Line: line, Message: msg}) }
	if root.Kind != 0 {
		walk(doc, reflect.TypeFor[Config](), "", add)
	}
	if len(out) == 0 {
		// Types the walk does not judge (a list where a string goes, …)
		// are the decoder's to report.
		var c Config
		dec := yaml.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			var te *yaml.TypeError
			if !errors.As(err, &te) {
				return []Problem{{File: file, Message: err.Error()}}
			}
			for _, e := range te.Errors {
				line, msg := splitLine(e)
				add(line, friendlyTypeError(msg))
			}
		}
	}
	if len(out) == 0 {
		if _, err := Parse(data); err != nil {
			for _, msg := range strings.Split(err.Error(), "\n") {
				if msg = strings.TrimSpace(msg); msg != "" {
					add(locate(doc, msg), msg)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Problem) int { return a.Line - b.Line })
	return out
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxProblem places a YAML syntax error. The parser leaves out the line
// when it is the first one.
func syntaxProblem(file string, err error) Problem {
	line, msg := splitLine(err.Error())
	if line == 0 {
		line = 1
	}
	return Problem{File: file, Line: line, Message: "YAML syntax: " + strings.TrimPrefix(msg, "yaml: ")}
}

func splitLine(s string) (int, string) {
	if m := lineRE.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, m[2]
	}
	return 0, s
}

var typeErrRE = regexp.MustCompile("^cannot unmarshal !!(\\w+) (?:`(.*)` )?into (.+)$")

// friendlyTypeError says a decoder type error without Go type names.
func friendlyTypeError(msg string) string {
	m := typeErrRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	got := map[string]string{"seq": "a list", "map": "a mapping", "str": "a string", "int": "an integer",
		"float": "a number", "bool": "true or false", "null": "nothing", "timestamp": "a time"}[m[1]]
	if got == "" {
		got = m[1]
	}
	if m[2] != "" {
		got += " (" + m[2] + ")"
	}
	return "want " + friendlyGoType(m[3]) + ", got " + got
}

func friendlyGoType(t string) string {
	switch {
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["), strings.Contains(t, "."):
		return "a mapping (key: value)"
	}
	return t
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType        = reflect.TypeFor[time.Time]()
)

// walk follows the YAML tree and the Go type it decodes into together,
// reporting unknown keys and scalars (durations, amounts) that do not
// parse, each at its line.
func walk(n *yaml.Node, t reflect.Type, path string, add func(int, string)) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != timeType && reflect.PointerTo(t).Implements(textUnmarshaler) {
		if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
			v := reflect.New(t).Interface().(encoding.TextUnmarshaler)
			if err := v.UnmarshalText([]byte(n.Value)); err != nil {
				add(n.Line, fmt.Sprintf("%s: %v", path, err))
			}
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := map[string]reflect.Type{}
		yamlFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				known := make([]string, 0, len(fields))
				for name := range fields {
					known = append(known, name)
				}
				slices.Sort(known)
				where := "at the top level"
				if path != "" {
					where = "under " + path
				}
				add(k.Line, fmt.Sprintf("unknown key %q %s; known keys: %s", k.Value, where, strings.Join(known, ", ")))
				continue
			}
			walk(n.Content[i+1], ft, join(path, k.Value), add)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), add)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), add)
		}
	}
}

// yamlFields collects a struct's keys as the YAML decoder names them.
func yamlFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				yamlFields(ft, out)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var (
	pathRE  = regexp.MustCompile(`^([a-z_]+(?:\[\d+\])?(?:\.[a-z_0-9]+(?:\[\d+\])?)*)(?:$|[ :])`)
	namedRE = regexp.MustCompile(`^([a-z_]+) "([^"]*)"`)
	stepRE  = regexp.MustCompile(`^([a-z_0-9]+)(?:\[(\d+)\])?$`)
)

// locate finds the line a validation message is about. Messages start
// with where they are: "vendors[0]: mcp: …", "governance.timeouts: …",
// `capability "a.b": chain[1]: …`, `fallback: capability "x": …`. locate
// follows those segments down the tree, skipping those that lead nowhere, and returns
// the deepest key's line (0 when not even the first leads anywhere).
func locate(root *yaml.Node, msg string) int {
	cur, line := root, 0
	for _, seg := range strings.Split(msg, ": ") {
		var next *yaml.Node
		var at int
		if m := namedRE.FindStringSubmatch(seg); m != nil {
			next, at = named(cur, m[1], m[2])
		}
		if next == nil {
			if m := pathRE.FindStringSubmatch(seg); m != nil {
				next, at = follow(cur, m[1])
			}
		}
		if next == nil {
			continue // prose, or a name the tree does not hold: try the next segment
		}
		cur, line = next, at
	}
	return line
}

// follow resolves a dotted path with indexes ("vendors[0].mcp") under n.
func follow(n *yaml.Node, path string) (*yaml.Node, int) {
	line := 0
	for _, step := range strings.Split(path, ".") {
		m := stepRE.FindStringSubmatch(step)
		if m == nil {
			return nil, 0
		}
		k, v := child(n, m[1])
		if v == nil {
			return nil, 0
		}
		n, line = v, k.Line
		if m[2] != "" {
			i, _ := strconv.Atoi(m[2])
			if n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return nil, 0
			}
			n = n.Content[i]
			line = n.Line
		}
	}
	return n, line
}

// named resolves `capability "x"`: the entry x of the "capabilities"
// mapping under n, or the item of that list whose name or id is x.
func named(n *yaml.Node, word, value string) (*yaml.Node, int) {
	for _, plural := range []string{word + "s", strings.TrimSuffix(word, "y") + "ies"} {
		_, list := child(n, plural)
		if list == nil {
			continue
		}
		switch list.Kind {
		case yaml.MappingNode:
			if k, v := child(list, value); v != nil {
				return v, k.Line
			}
		case yaml.SequenceNode:
			for _, item := range list.Content {
				for _, key := range []string{"name", "id"} {
					if _, v := child(item, key); v != nil && v.Value == value {
						return item, item.Line
					}
				}
			}
		}
	}
	return nil, 0
}

// child returns the key and value nodes of key in a mapping node.
func child(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}
