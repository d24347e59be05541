package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCatalogName(t *testing.T) {
	tests := []struct {
		name, vendor, tool, want string
	}{
		{"plain", "weather-a", "current_weather", "weather-a__current_weather"},
		{"dots become hashed", "fs", "read.file", "fs__read_file_" + hashOf("fs", "read.file", 8)},
		{"long", "v", strings.Repeat("x", 80), ""},
		{"unicode", "v", "天气", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CatalogName(tt.vendor, tt.tool)
			if !ValidName(got) {
				t.Fatalf("CatalogName(%q, %q) = %q, not a valid name", tt.vendor, tt.tool, got)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if got != CatalogName(tt.vendor, tt.tool) {
				t.Error("not deterministic")
			}
		})
	}
}

func hashOf(v, tool string, n int) string {
	s := catalogName(v, tool, n)
	return s[strings.LastIndexByte(s, '_')+1:]
}

func TestCatalogNamesNeverCollide(t *testing.T) {
	cat := NewCatalog()
	long := strings.Repeat("a", 70)
	var defs []ToolDef
	// The last name is crafted to equal another tool's shortened name.
	crafted := CatalogName("v", "x.y")[len("v__"):]
	for _, n := range []string{long, long + "b", long + "c", "x.y", "x_y", "x y", crafted} {
		defs = append(defs, ToolDef{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	if errs := cat.SetVendorTools("v", defs); len(errs) > 0 {
		t.Fatal(errs)
	}
	seen := map[string]string{}
	for _, tl := range cat.Tools() {
		if !ValidName(tl.Catalog) {
			t.Errorf("%q is not a valid name", tl.Catalog)
		}
		key := tl.Vendor + "/" + tl.Def.Name
		if other, dup := seen[tl.Catalog]; dup {
			t.Errorf("%s and %s share %q", other, key, tl.Catalog)
		}
		seen[tl.Catalog] = key
		e, ok := cat.Lookup(tl.Catalog)
		if !ok || e.Tool != tl {
			t.Errorf("Lookup(%q) does not reverse to %s", tl.Catalog, key)
		}
	}
	if len(seen) != 7 {
		t.Errorf("got %d tools, want 7", len(seen))
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"bad type", `{"type":"object","properties":{"size":{"type":"integr"}}}`, "/properties/size/type"},
		{"not json", `{"type":`, "not valid JSON"},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, "remote $ref"},
		{"not an object", `[1,2]`, "must be a JSON object"},
		{"too deep", strings.Repeat(`{"items":`, 70) + `{}` + strings.Repeat(`}`, 70), "nests"},
		{"too big", `{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`, "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileSchema(json.RawMessage(tt.schema))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestValidatePointers(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"days":{"type":"integer","maximum":7}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(map[string]any{"city": "Paris", "days": 3.0}); err != nil {
		t.Fatalf("valid document refused: %v", err)
	}
	err = s.Validate(map[string]any{"days": 9.0})
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("err = %T %v, want *SchemaError", err, err)
	}
	var ptrs []string
	for _, is := range se.Issues {
		ptrs = append(ptrs, is.Pointer)
	}
	if diff := cmp.Diff([]string{"", "/days"}, ptrs); diff != "" {
		t.Errorf("pointers (-want +got):\n%s\n%v", diff, se)
	}
}

func TestSetVendorToolsRejectsOnlyBadTools(t *testing.T) {
	cat := NewCatalog()
	var changes []Change
	cat.Subscribe(func(c Change) { changes = append(changes, c) })
	defs := []ToolDef{
		{Name: "good", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "draw", InputSchema: json.RawMessage(`{"type":"object","properties":{"size":{"type":"integr"}}}`)},
		{Name: "liar", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":7}`)},
	}
	errs := cat.SetVendorTools("doubao", defs)
	if len(errs) != 2 {
		t.Fatalf("got %d errors, want 2: %v", len(errs), errs)
	}
	want := `vendor "doubao": tool "draw": input schema: /properties/size/type`
	if !strings.Contains(errs[0].Error(), want) {
		t.Errorf("error %q does not contain %q", errs[0], want)
	}
	if !strings.Contains(errs[1].Error(), `tool "liar": output schema`) {
		t.Errorf("error %q does not name the output schema", errs[1])
	}
	if _, ok := cat.Lookup("doubao__good"); !ok {
		t.Error("the good tool is not served")
	}
	if len(changes) != 1 {
		t.Fatalf("got %d changes, want 1", len(changes))
	}
	cat.SetVendorTools("doubao", defs) // same again: no change
	if len(changes) != 1 {
		t.Errorf("re-registering the same tools notified subscribers")
	}
	cat.RemoveVendor("doubao")
	if _, ok := cat.Lookup("doubao__good"); ok || len(changes) != 2 {
		t.Errorf("RemoveVendor: still served or not notified (%d changes)", len(changes))
	}
}

func TestCapabilities(t *testing.T) {
	cat := NewCatalog()
	errs := cat.SetCapabilities([]Capability{
		{Name: "weather.current", InputSchema: json.RawMessage(`{"type":"object"}`), Chain: []ChainStep{{Tool: "weather-a/current_weather"}}},
		{Name: "Bad Name", Chain: []ChainStep{{Tool: "a/b"}}},
		{Name: "image.generate"},
		{Name: "maps.route", Chain: []ChainStep{{Tool: "no-slash"}}},
	})
	if len(errs) != 3 {
		t.Fatalf("got %d errors, want 3: %v", len(errs), errs)
	}
	for _, n := range []string{"weather.current", "weather_current"} {
		if e, ok := cat.Lookup(n); !ok || e.Capability == nil || e.Name != "weather_current" {
			t.Errorf("Lookup(%q) = %+v, %v", n, e, ok)
		}
	}
}

func TestApplyMappings(t *testing.T) {
	in := map[string]any{"city": "Paris", "units": "metric", "opts": map[string]any{"lang": "fr"}}
	got, err := ApplyMappings(in, []Mapping{{From: "/city", To: "/location"}, {From: "/opts/lang", To: "/language"}, {From: "/missing", To: "/x"}, {From: "/units", To: "/format/units"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"location": "Paris", "language": "fr", "opts": map[string]any{}, "format": map[string]any{"units": "metric"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if in["city"] != "Paris" {
		t.Error("input was modified")
	}
	if _, err := ApplyMappings(in, []Mapping{{From: "city", To: "/x"}}); err == nil {
		t.Error("a pointer without a leading slash was accepted")
	}
}

func TestFunctionSpecsCapabilitiesFirst(t *testing.T) {
	cat := NewCatalog()
	cat.SetVendorTools("a", []ToolDef{{Name: "t", Description: "tool t", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	cat.SetCapabilities([]Capability{{Name: "x.y", Description: "cap", Chain: []ChainStep{{Tool: "a/t"}}}})
	specs := FunctionSpecs(cat.Entries(nil))
	var names []string
	for _, s := range specs {
		names = append(names, s.Function.Name)
		if s.Type != "function" || !ValidName(s.Function.Name) {
			t.Errorf("bad spec %+v", s)
		}
	}
	if diff := cmp.Diff([]string{"x_y", "a__t"}, names); diff != "" {
		t.Error(diff)
	}
}

func TestVendorValidate(t *testing.T) {
	tests := []struct {
		name string
		v    Vendor
		want string
	}{
		{"ok http", Vendor{ID: "w", MCP: &MCPSpec{Transport: "http", URL: "http://127.0.0.1:1/mcp"}}, ""},
		{"ok stdio", Vendor{ID: "e", MCP: &MCPSpec{Transport: "stdio", Command: "npx"}}, ""},
		{"bad id", Vendor{ID: "Weather_A", MCP: &MCPSpec{Transport: "stdio", Command: "x"}}, "vendor id"},
		{"no section", Vendor{ID: "w"}, "needs an mcp or an a2a section"},
		{"bad transport", Vendor{ID: "w", MCP: &MCPSpec{Transport: "grpc"}}, `transport "grpc" is unknown`},
		{"stdio without command", Vendor{ID: "w", MCP: &MCPSpec{Transport: "stdio"}}, "needs a command"},
		{"bad url", Vendor{ID: "w", MCP: &MCPSpec{Transport: "http", URL: "ftp://x"}}, "scheme must be http"},
		{"a2a", Vendor{ID: "t", A2A: &A2ASpec{Card: "http://127.0.0.1:9200/.well-known/agent-card.json"}}, ""},
		{"keywords", Vendor{ID: "w", MCP: &MCPSpec{Transport: "stdio", Command: "x"}, Keywords: map[string][]string{"current": {"天气", "weather"}}}, ""},
		{"empty keyword", Vendor{ID: "w", MCP: &MCPSpec{Transport: "stdio", Command: "x"}, Keywords: map[string][]string{"current": {" "}}}, `keywords: tool "current": keyword " "`},
		{"long keyword", Vendor{ID: "w", MCP: &MCPSpec{Transport: "stdio", Command: "x"}, Keywords: map[string][]string{"t": {strings.Repeat("x", 65)}}}, "want 1 to 64 bytes"},
		{"too many keywords", Vendor{ID: "w", MCP: &MCPSpec{Transport: "stdio", Command: "x"}, Keywords: map[string][]string{"t": make([]string, 65)}}, "65 keywords, over 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.v.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	got, err := ExpandEnv("Bearer ${TOKEN}", lookup)
	if err != nil || got != "Bearer s3cret" {
		t.Fatalf("got %q, %v", got, err)
	}
	_, err = ExpandEnv("${NOPE}", lookup)
	if err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzCompileSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object"}`, `{"type":"integr"}`, `{"$ref":"#/$defs/a","$defs":{"a":{"type":"string"}}}`, `{"pattern":"(a+)+$"}`, `true`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sch, err := CompileSchema(json.RawMessage(s))
		if err != nil {
			return
		}
		_ = sch.Validate(map[string]any{"a": 1.0, "b": []any{"x"}})
	})
}

func FuzzApplyMappings(f *testing.F) {
	f.Add(`{"a":{"b":1}}`, "/a/b", "/c/d")
	f.Add(`{"a":[1,2]}`, "/a/1", "/a/x")
	f.Fuzz(func(t *testing.T, doc, from, to string) {
		var m map[string]any
		if json.Unmarshal([]byte(doc), &m) != nil {
			return
		}
		before := fmt.Sprint(m)
		_, _ = ApplyMappings(m, []Mapping{{From: from, To: to}})
		if fmt.Sprint(m) != before {
			t.Fatal("input modified")
		}
	})
}
