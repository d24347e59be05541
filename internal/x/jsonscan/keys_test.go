package jsonscan

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestRepeatedKey(t *testing.T) {
	many := func(extra string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range 40 {
			b.WriteString(`"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1,`)
		}
		b.WriteString(extra + `}`)
		return b.String()
	}
	tests := []struct {
		name, doc, want string
	}{
		{"distinct", `{"a":1,"b":{"a":2},"c":[{"a":1},{"a":1}]}`, ""},
		{"same key", `{"a":1,"a":2}`, "a"},
		{"case", `{"structuredContent":{"n":"x"},"StructuredContent":{"n":1}}`, "StructuredContent"},
		{"escaped", `{"content":[],"\u0063ontent":[]}`, "content"},
		{"escaped case", `{"structuredContent":1,"structured\u0043ontent":2}`, "structuredContent"},
		{"kelvin sign", `{"k":1,"\u212a":2}`, "\u212a"},
		{"long s", `{"s":1,"ſ":2}`, "ſ"},
		{"nested in array", `{"content":[{"type":"text","text":"a","Text":"b"}]}`, "Text"},
		{"deep", `[[[{"x":{"y":1,"y":2}}]]]`, "y"},
		{"large object", many(`"KAA":2`), "KAA"},
		{"large object distinct", many(`"zz":2`), ""},
		{"siblings may share keys", `[{"a":1},{"a":2},{"A":3}]`, ""},
		{"invalid after the repeat", `{"a":1,"a"`, "a"},
		{"invalid", `{"a":1,"b"`, ""},
		{"scalar", `"a"`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key, ok := RepeatedKey([]byte(tc.doc))
			if key != tc.want || ok != (tc.want != "") {
				t.Errorf("RepeatedKey(%s) = %q, %v; want %q", tc.doc, key, ok, tc.want)
			}
		})
	}
}

// TestRepeatedKeyAgreesWithEncodingJSON: for every pair of keys, a struct
// field named by the first takes a member keyed by the second exactly when
// RepeatedKey calls the two the same.
func TestRepeatedKeyAgreesWithEncodingJSON(t *testing.T) {
	keys := []string{"a", "A", "k", "K", "\u212a", "s", "S", "ſ", "ß", "ẞ", "σ", "ς", "Σ", "é", "É", "i", "İ", "ı"}
	for _, x := range keys {
		for _, y := range keys {
			// A struct with one field tagged x, decoding {y: 1}.
			doc := `{"` + y + `":1}`
			matched := structMatches(t, x, doc)
			_, repeated := RepeatedKey([]byte(`{"` + x + `":0,"` + y + `":1}`))
			if matched != repeated {
				t.Errorf("keys %q and %q: encoding/json matches them %v, RepeatedKey %v", x, y, matched, repeated)
			}
		}
	}
}

// structMatches reports whether encoding/json decodes doc's one member
// into a field whose JSON name is name.
func structMatches(t *testing.T, name, doc string) bool {
	t.Helper()
	v := newTagged(name)
	if err := json.Unmarshal([]byte(doc), v.Addr().Interface()); err != nil {
		t.Fatal(err)
	}
	return v.Field(0).Int() == 1
}

func FuzzRepeatedKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"A":2}`, `{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":1}}`, `[{"\u0061":1,"a":2}]`, `{"k":1,"\u212a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		key, ok := RepeatedKey(b)
		if ok && !json.Valid(b) {
			// A repeated key is reported as soon as it is seen; the rest
			// of the document need not be valid.
			return
		}
		if !ok && key != "" {
			t.Fatalf("no repeat but key %q", key)
		}
		if ok || !json.Valid(b) {
			return
		}
		// No object repeats a key: decoding into any and encoding back
		// keeps every member, so a second decode gives the same value.
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if n, m := countMembers(b), countDecoded(v); n != m {
			t.Fatalf("%s: %d members written, %d decoded, yet no repeated key", b, n, m)
		}
	})
}

// newTagged makes a struct value with one int field tagged name.
func newTagged(name string) reflect.Value {
	typ := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[int](), Tag: reflect.StructTag(`json:"` + name + `"`)}})
	return reflect.New(typ).Elem()
}

// countMembers counts the members of every object in the valid document
// b, with Object and Array.
func countMembers(b []byte) int {
	n := 0
	if Object(b, func(_, v []byte) bool { n += 1 + countMembers(v); return true }) {
		return n
	}
	Array(b, func(elem []byte) bool { n += countMembers(elem); return true })
	return n
}

// countDecoded counts the members of every map in v.
func countDecoded(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			n += 1 + countDecoded(e)
		}
	case []any:
		for _, e := range v {
			n += countDecoded(e)
		}
	}
	return n
}
