package mcpregistry

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/registry"
)

const remoteDoc = `{
  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": "io.github.acme/weather",
  "title": "Acme Weather",
  "description": "Current weather and forecasts",
  "version": "1.2.0",
  "repository": {"url": "https://github.com/acme/weather", "source": "github"},
  "remotes": [
    {"type": "sse", "url": "https://sse.acme.example/sse"},
    {"type": "streamable-http", "url": "https://mcp.acme.example/mcp",
     "headers": [{"name": "Authorization", "value": "Bearer ${VENDOR_WEATHER_KEY}", "isSecret": true},
                 {"name": "X-Optional", "description": "not needed"}]}
  ]
}`

// withField returns remoteDoc with one top-level field set (or removed,
// for a nil value).
func withField(t *testing.T, doc, key string, v any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	if v == nil {
		delete(m, key)
	} else {
		m[key] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		pointer string // of the first issue; "" with ok
		says    string
		ok      bool
	}{
		{name: "remote", doc: remoteDoc, ok: true},
		{name: "not JSON", doc: `{"name":`, says: "not valid JSON"},
		{name: "empty", doc: `  `, says: "is empty"},
		{name: "array", doc: `[]`, says: "JSON object"},
		{name: "no $schema", doc: withField(t, remoteDoc, "$schema", nil), pointer: "/$schema", says: "is required: set it to " + SchemaURL},
		{name: "older schema", doc: withField(t, remoteDoc, "$schema", "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"), pointer: "/$schema", says: "use " + SchemaURL},
		{name: "no name", doc: withField(t, remoteDoc, "name", nil), pointer: "", says: "name"},
		{name: "name without namespace", doc: withField(t, remoteDoc, "name", "weather"), pointer: "/name", says: "does not match pattern"},
		{name: "description too long", doc: withField(t, remoteDoc, "description", strings.Repeat("x", 101)), pointer: "/description", says: "maxLength"},
		{name: "version range", doc: withField(t, remoteDoc, "version", "^1.2.0"), pointer: "/version", says: "not one specific version"},
		{name: "version latest", doc: withField(t, remoteDoc, "version", "latest"), pointer: "/version", says: "not one specific version"},
		{name: "remote of type stdio", doc: withField(t, remoteDoc, "remotes", []any{map[string]any{"type": "stdio"}}), pointer: "/remotes/0", says: ""},
		{name: "remote URL not http", doc: withField(t, remoteDoc, "remotes", []any{map[string]any{"type": "streamable-http", "url": "ftp://x/mcp"}}), pointer: "/remotes/0", says: ""},
		{name: "bad website URL", doc: withField(t, remoteDoc, "websiteUrl", "not a url"), pointer: "/websiteUrl", says: ""},
		{name: "package version latest", doc: withField(t, remoteDoc, "packages", []any{map[string]any{"registryType": "npm", "identifier": "x", "version": "latest", "transport": map[string]any{"type": "stdio"}}}), pointer: "/packages/0/version", says: ""},
		{name: "too big", doc: `{"x":"` + strings.Repeat("a", MaxServerJSONBytes) + `"}`, says: "over the"},
		{name: "too deep", doc: strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40), says: "levels deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Decode([]byte(tt.doc))
			if tt.ok {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if doc.Name != "io.github.acme/weather" || doc.Version != "1.2.0" || len(doc.Remotes) != 2 {
					t.Errorf("decoded %+v", doc)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Decode: %v, want a *ValidationError", err)
			}
			found := false
			for _, is := range ve.Issues {
				if strings.HasPrefix(is.Pointer, tt.pointer) && strings.Contains(is.Message, tt.says) {
					found = true
				}
			}
			if !found {
				t.Errorf("issues %+v: want one at %q saying %q", ve.Issues, tt.pointer, tt.says)
			}
		})
	}
}

func TestVendor(t *testing.T) {
	stdioDoc := withField(t, withField(t, remoteDoc, "remotes", nil), "packages", []any{
		map[string]any{"registryType": "npm", "identifier": "@acme/weather-mcp", "version": "1.2.0", "transport": map[string]any{"type": "stdio"},
			"packageArguments":     []any{map[string]any{"type": "named", "name": "--units", "value": "metric"}, map[string]any{"type": "positional", "valueHint": "dir"}},
			"environmentVariables": []any{map[string]any{"name": "WEATHER_KEY", "value": "${VENDOR_WEATHER_KEY}"}}},
	})
	tests := []struct {
		name       string
		doc        string
		allowStdio bool
		want       *registry.MCPSpec
		pointer    string
		says       string
	}{
		{name: "streamable-http before sse", doc: remoteDoc, want: &registry.MCPSpec{Transport: "http", URL: "https://mcp.acme.example/mcp",
			Headers: map[string]string{"Authorization": "Bearer ${VENDOR_WEATHER_KEY}"}}},
		{name: "sse alone", doc: withField(t, remoteDoc, "remotes", []any{map[string]any{"type": "sse", "url": "https://sse.acme.example/sse"}}),
			want: &registry.MCPSpec{Transport: "sse", URL: "https://sse.acme.example/sse"}},
		{name: "URL with variables", doc: withField(t, remoteDoc, "remotes", []any{map[string]any{"type": "streamable-http", "url": "https://{tenant}.acme.example/mcp"}}),
			pointer: "/remotes/0/url", says: "{variables}"},
		{name: "required header without a value", doc: withField(t, remoteDoc, "remotes", []any{map[string]any{"type": "streamable-http", "url": "https://mcp.acme.example/mcp",
			"headers": []any{map[string]any{"name": "X-Key", "isRequired": true}}}}), pointer: "/remotes/0/headers/0", says: `"X-Key" is required but has no value`},
		{name: "header with variables", doc: withField(t, remoteDoc, "remotes", []any{map[string]any{"type": "streamable-http", "url": "https://mcp.acme.example/mcp",
			"headers": []any{map[string]any{"name": "X-Key", "value": "{api_key}"}}}}), pointer: "/remotes/0/headers/0/value", says: "{variables}"},
		{name: "packages without stdio", doc: stdioDoc, pointer: "/packages", says: "allow_stdio_vendors"},
		{name: "npm package with stdio", doc: stdioDoc, allowStdio: true, want: &registry.MCPSpec{Transport: "stdio", Command: "npx",
			Args: []string{"-y", "@acme/weather-mcp@1.2.0", "--units", "metric"}, Env: map[string]string{"WEATHER_KEY": "${VENDOR_WEATHER_KEY}"}}},
		{name: "nothing to connect to", doc: withField(t, remoteDoc, "remotes", nil), pointer: "/remotes", says: "streamable-http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Decode([]byte(tt.doc))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			v, err := doc.Vendor("weather", &VendorOptions{AllowStdio: tt.allowStdio})
			if tt.want == nil {
				var ve *ValidationError
				if !errors.As(err, &ve) || ve.Issues[0].Pointer != tt.pointer || !strings.Contains(ve.Issues[0].Message, tt.says) {
					t.Fatalf("Vendor: %v; want an issue at %q saying %q", err, tt.pointer, tt.says)
				}
				return
			}
			if err != nil {
				t.Fatalf("Vendor: %v", err)
			}
			if diff := cmp.Diff(tt.want, v.MCP); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if v.ID != "weather" || v.Name != "Acme Weather" {
				t.Errorf("vendor %q named %q", v.ID, v.Name)
			}
			l, err := ParseListing(v.Listing)
			if err != nil || l.Name != doc.Name || l.Version != "1.2.0" || l.Remotes != nil || l.Packages != nil || l.Repository == nil {
				t.Errorf("listing %s: %v", v.Listing, err)
			}
			if strings.Contains(string(v.Listing), "VENDOR_WEATHER_KEY") {
				t.Errorf("the listing keeps the remote's headers: %s", v.Listing)
			}
		})
	}
}

// The server.json examples of the registry's documentation
// (generic-server-json.md, every one that names a $schema) are valid;
// each becomes a vendor, or is refused with a clear reason.
func TestRegistryExamples(t *testing.T) {
	b, err := os.ReadFile("testdata/registry-examples.json")
	if err != nil {
		t.Fatal(err)
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(b, &docs); err != nil {
		t.Fatal(err)
	}
	for _, raw := range docs {
		doc, err := Decode(raw)
		if err != nil {
			t.Errorf("%.80s: Decode: %v", raw, err)
			continue
		}
		v, err := doc.Vendor("x", nil)
		switch {
		case len(doc.Remotes) == 0 && err == nil:
			t.Errorf("%s: packages only, stdio not allowed: became %+v", doc.Name, v.MCP)
		case err != nil:
			t.Logf("%s: refused: %v", doc.Name, err)
		default:
			t.Logf("%s: %s %s", doc.Name, v.MCP.Transport, v.MCP.URL)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(remoteDoc))
	f.Add([]byte(`{"$schema":"` + SchemaURL + `","name":"a.b/c","description":"d","version":"1","packages":[{"registryType":"npm","identifier":"x","version":"1","transport":{"type":"stdio"},"packageArguments":[{"type":"positional","value":"v"}]}]}`))
	f.Add([]byte(`{"$schema":"` + SchemaURL + `","name":"a.b/c","description":"d","version":"1","remotes":[{"type":"sse","url":"http://h/{x}"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := Decode(b)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Issues) == 0 {
				t.Fatalf("Decode: %v is not a *ValidationError with issues", err)
			}
			return
		}
		for _, stdio := range []bool{false, true} {
			v, err := doc.Vendor("v", &VendorOptions{AllowStdio: stdio})
			if err != nil {
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("Vendor: %v is not a *ValidationError", err)
				}
				continue
			}
			if v.MCP == nil || !stdio && v.MCP.Transport == registry.TransportStdio {
				t.Fatalf("Vendor without stdio allowed gave %+v", v.MCP)
			}
			if _, err := ParseListing(v.Listing); err != nil {
				t.Fatal(err)
			}
		}
	})
}
