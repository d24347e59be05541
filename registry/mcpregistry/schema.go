package mcpregistry

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolhub/toolhub/registry"
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

// Issue is one thing wrong with a server.json: a JSON pointer into the
// document ("" is the root) and what is wrong there.
type Issue = registry.SchemaIssue

// ValidationError lists what is wrong with a server.json.
type ValidationError struct {
	Issues []Issue
}

func (e *ValidationError) Error() string {
	return "server.json: " + (&registry.SchemaError{Issues: e.Issues}).Error()
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
	return &ValidationError{Issues: registry.ValidationIssues(ve)}
}
