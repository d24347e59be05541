package mcpregistry

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaVersion is the server.json schema toolhub validates against.
const SchemaVersion = "2025-12-11"

// SchemaURL is the published schema's address: a server.json's $schema
// must name it.
const SchemaURL = "https://static.modelcontextprotocol.io/schemas/" + SchemaVersion + "/server.schema.json"

// schemaJSON is the schema published at SchemaURL, as the MCP Registry
// (github.com/modelcontextprotocol/registry, internal/validators/schemas)
// embeds it. toolhub never fetches it.
//
//go:embed schema/2025-12-11.json
var schemaJSON []byte

var printer = message.NewPrinter(language.English)

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // the registry asserts formats (uri) too
	c.UseLoader(noLoader{})
	if err := c.AddResource(SchemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(SchemaURL)
})

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("mcpregistry: no schema is fetched (%s)", url)
}

// Schema returns the embedded server.json schema.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// Issue is one thing wrong with a server.json.
type Issue struct {
	Pointer string `json:"pointer"` // JSON pointer into the document ("" is the root)
	Message string `json:"message"`
}

// ValidationError lists what is wrong with a server.json.
type ValidationError struct {
	Issues []Issue
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		p := is.Pointer
		if p == "" {
			p = "/"
		}
		parts[i] = p + ": " + is.Message
	}
	return "server.json: " + strings.Join(parts, "; ")
}

func invalid(pointer, format string, args ...any) *ValidationError {
	return &ValidationError{Issues: []Issue{{Pointer: pointer, Message: fmt.Sprintf(format, args...)}}}
}

// validateSchema checks a decoded document against the embedded schema.
func validateSchema(v any) error {
	s, err := compiled()
	if err != nil {
		panic("mcpregistry: the embedded schema does not compile: " + err.Error()) // a build defect
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return invalid("", "%v", err)
	}
	e := &ValidationError{}
	seen := map[Issue]bool{}
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			is := Issue{Pointer: pointer(v.InstanceLocation), Message: v.ErrorKind.LocalizedString(printer)}
			if !seen[is] {
				seen[is] = true
				e.Issues = append(e.Issues, is)
			}
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	const maxIssues = 20
	if len(e.Issues) > maxIssues {
		e.Issues = append(e.Issues[:maxIssues], Issue{Message: fmt.Sprintf("and %d more", len(e.Issues)-maxIssues)})
	}
	return e
}

func pointer(loc []string) string {
	var b strings.Builder
	for _, p := range loc {
		b.WriteByte('/')
		p = strings.ReplaceAll(p, "~", "~0")
		b.WriteString(strings.ReplaceAll(p, "/", "~1"))
	}
	return b.String()
}
