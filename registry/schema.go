package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

// MaxSchemaBytes bounds one raw schema; larger schemas are refused before
// they are parsed.
const MaxSchemaBytes = 256 << 10

// maxSchemaDepth bounds the nesting of a schema document.
const maxSchemaDepth = 64

// ErrRemoteRef is returned for a schema that refers to another document:
// toolhub never fetches a schema over the network.
var ErrRemoteRef = errors.New("registry: remote $ref is not allowed")

// Schema is a compiled JSON schema together with its source.
type Schema struct {
	raw   json.RawMessage
	s     *jsonschema.Schema
	quick *quickNode // nil: the schema is outside the quick subset
}

// Raw returns the schema as it was registered.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// SchemaError says where a document broke a schema (or where a schema broke
// the meta-schema): one issue per failing location, each with a JSON pointer.
type SchemaError struct {
	Issues []SchemaIssue
}

// SchemaIssue is one failed keyword.
type SchemaIssue struct {
	Pointer string `json:"pointer"` // JSON pointer into the validated document ("" is the root)
	Message string `json:"message"`
}

func (e *SchemaError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		p := is.Pointer
		if p == "" {
			p = "/"
		}
		parts[i] = p + ": " + is.Message
	}
	return strings.Join(parts, "; ")
}

type noRemoteLoader struct{}

func (noRemoteLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%w: %s", ErrRemoteRef, url)
}

// CompileSchema compiles a raw JSON schema (draft 2020-12 unless it says
// otherwise). It refuses oversized or too deeply nested schemas and any
// $ref to another document. A schema that breaks the meta-schema gives a
// *SchemaError whose pointers point into the schema.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, fmt.Errorf("schema is %d bytes, over the %d-byte limit", len(raw), MaxSchemaBytes)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, errors.New("schema is empty")
	}
	if d := JSONDepth(raw); d > maxSchemaDepth {
		return nil, fmt.Errorf("schema nests %d levels deep, over the limit of %d", d, maxSchemaDepth)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %v", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		if b, isBool := doc.(bool); !isBool || !b {
			return nil, errors.New("schema must be a JSON object")
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noRemoteLoader{})
	const loc = "toolhub:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("schema: %v", err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, compileError(err)
	}
	return &Schema{raw: append(json.RawMessage(nil), raw...), s: s, quick: quickCompile(doc)}, nil
}

func compileError(err error) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			return schemaError(ve)
		}
	}
	if errors.Is(err, ErrRemoteRef) {
		return ErrRemoteRef
	}
	msg := err.Error()
	msg = strings.ReplaceAll(msg, "toolhub:///schema.json#", "")
	msg = strings.ReplaceAll(msg, "toolhub:///schema.json", "schema")
	return errors.New(msg)
}

// Validate checks a decoded JSON value (as from encoding/json) against the
// schema. It returns nil or a *SchemaError.
func (s *Schema) Validate(v any) error {
	if s.quick != nil && s.quick.ok(v) {
		return nil // certainly valid (see quickNode)
	}
	err := s.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return schemaError(ve)
	}
	return &SchemaError{Issues: []SchemaIssue{{Message: err.Error()}}}
}

// schemaError flattens a validation tree into its leaf issues.
func schemaError(ve *jsonschema.ValidationError) *SchemaError {
	return &SchemaError{Issues: ValidationIssues(ve)}
}

// ValidationIssues are the leaf issues of a validation tree, each once, in
// the tree's order, at most 20 (then one "and N more"): what a schema
// error tells its reader.
func ValidationIssues(ve *jsonschema.ValidationError) []SchemaIssue {
	var out []SchemaIssue
	seen := map[SchemaIssue]bool{}
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			is := SchemaIssue{Pointer: pointer(v.InstanceLocation), Message: v.ErrorKind.LocalizedString(printer)}
			if !seen[is] {
				seen[is] = true
				out = append(out, is)
			}
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	const maxIssues = 20
	if len(out) > maxIssues {
		out = append(out[:maxIssues], SchemaIssue{Message: fmt.Sprintf("and %d more", len(out)-maxIssues)})
	}
	return out
}

func pointer(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range loc {
		b.WriteByte('/')
		p = strings.ReplaceAll(p, "~", "~0")
		b.WriteString(strings.ReplaceAll(p, "/", "~1"))
	}
	return b.String()
}

// JSONDepth returns the deepest nesting of objects and arrays in raw,
// without decoding it.
func JSONDepth(raw []byte) int {
	depth, max := 0, 0
	inStr, esc := false, false
	for _, c := range raw {
		switch {
		case esc:
			esc = false
		case inStr:
			switch c {
			case '\\':
				esc = true
			case '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				max = depth
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return max
}
