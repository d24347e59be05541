package registry

import (
	"encoding/json"
	"math"
	"testing"
)

// quickSchemas are schemas of the quick subset, and a few just outside it.
var quickSchemas = []struct {
	raw    string
	subset bool
}{
	{`{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"units":{"enum":["metric","imperial"]}},"additionalProperties":false}`, true},
	{`{"type":"object","required":["temp_c"],"properties":{"temp_c":{"type":"number"}}}`, true},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integer","description":"count"},"tags":{"type":"array","items":{"type":"string"}},"flag":{"type":["boolean","null"]}},"additionalProperties":{"type":"string"}}`, true},
	{`{"type":"object","properties":{"deep":{"type":"object","required":["x"],"properties":{"x":{"enum":[true,null,"x"]}},"additionalProperties":false}}}`, true},
	{`{}`, true},
	{`true`, false},
	{`{"type":"object","properties":{"s":{"type":"string","minLength":2}}}`, false},
	{`{"type":"object","properties":{"n":{"enum":[1,2]}}}`, false},
	{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`, false},
	{`{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, false},
	{`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`, false},
}

// quickDocs are documents, as encoding/json decodes them, plus Go values a
// caller may build by hand.
var quickDocs = []string{
	`{}`, `{"city":"Oslo"}`, `{"city":"Oslo","units":"metric"}`, `{"city":"Oslo","units":"kelvin"}`,
	`{"city":1}`, `{"city":"Oslo","extra":1}`, `{"temp_c":21.5}`, `{"temp_c":"21"}`, `{"temp_c":null}`,
	`{"n":3}`, `{"n":3.5}`, `{"n":3.0}`, `{"n":-0}`, `{"n":1e300}`, `{"tags":["a","b"]}`, `{"tags":["a",1]}`,
	`{"tags":"a"}`, `{"flag":true}`, `{"flag":null}`, `{"flag":"no"}`, `{"other":"x"}`, `{"other":2}`,
	`{"deep":{"x":true}}`, `{"deep":{"x":"x"}}`, `{"deep":{"x":"y"}}`, `{"deep":{}}`, `{"deep":{"x":null,"y":1}}`,
	`{"deep":[]}`, `{"s":"abc"}`, `{"s":"a"}`, `[]`, `"str"`, `1`, `null`, `true`,
}

func TestQuickSchemaAgrees(t *testing.T) {
	for _, sc := range quickSchemas {
		s, err := CompileSchema(json.RawMessage(sc.raw))
		if err != nil {
			t.Fatalf("%s: %v", sc.raw, err)
		}
		if (s.quick != nil) != sc.subset {
			t.Errorf("%s: quick subset = %v, want %v", sc.raw, s.quick != nil, sc.subset)
		}
		if s.quick == nil {
			continue
		}
		check := func(doc string, v any, decoded bool) {
			t.Helper()
			full := s.s.Validate(v) == nil
			quick := s.quick.ok(v)
			if quick && !full {
				t.Errorf("%s: %s: quick says valid, the validator does not", sc.raw, doc)
			}
			if decoded && full && !quick {
				t.Errorf("%s: %s: valid, but the quick path sent it to the validator", sc.raw, doc)
			}
		}
		for _, doc := range quickDocs {
			var v any
			if err := json.Unmarshal([]byte(doc), &v); err != nil {
				t.Fatal(err)
			}
			check(doc, v, true)
		}
		for name, v := range map[string]any{
			"int":      map[string]any{"n": 3, "temp_c": int64(2), "city": "x"},
			"inf":      map[string]any{"temp_c": math.Inf(1)},
			"nan":      map[string]any{"n": math.NaN()},
			"Number":   map[string]any{"n": json.Number("3")},
			"strmap":   map[string]string{"city": "x"},
			"strslice": map[string]any{"tags": []string{"a"}},
		} {
			check(name, v, false)
		}
	}
}

// FuzzQuickSchema: whatever the document, the quick path never calls valid
// what the validator refuses.
func FuzzQuickSchema(f *testing.F) {
	for _, d := range quickDocs {
		f.Add(d)
	}
	var schemas []*Schema
	for _, sc := range quickSchemas {
		if s, err := CompileSchema(json.RawMessage(sc.raw)); err == nil && s.quick != nil {
			schemas = append(schemas, s)
		}
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		for _, s := range schemas {
			if s.quick.ok(v) && s.s.Validate(v) != nil {
				t.Errorf("%s: %s: quick says valid, the validator does not", s.raw, doc)
			}
		}
	})
}
