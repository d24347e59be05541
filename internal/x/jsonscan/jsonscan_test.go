package jsonscan

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

var corpus = []string{
	``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `null`, `true`, `false`, `nul`, `truex`, `"x"`, `"\u00e9\n\"\\\/\b\f\r\t"`,
	`"\u00G0"`, `"\x"`, "\"a\x01\"", "\"\xff\xfe\"", `"unterminated`, `0`, `-0`, `01`, `-`, `1.`, `1.5e`, `1.5e+3`,
	`-12.25E-07`, `1e5`, `.5`, `+1`, `{"a":1,"b":[true,false,null,{"c":"d"}],"e":{}}`, `{"a":1,}`, `[1,]`,
	`{"a" 1}`, `{a:1}`, `{"a":1}x`, `[1 2]`, `{"a":1 "b":2}`, `[[[]]]`, `[{]}`, `{"a":[}`, `{"\u0041":"dup","A":2}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`,
	"\t{\r\n\"k\"\t:\n[ 1 , 2 ]\r}\n",
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, s := range corpus {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
	}{{"at the limit", maxDepth}, {"one past it", maxDepth + 1}} {
		for _, open := range []string{"[", `{"k":`} {
			closer := "]"
			if open != "[" {
				closer = "}"
			}
			// The innermost container is empty: it counts as a level
			// in encoding/json too.
			inner := "[]"
			doc := strings.Repeat(open, tc.n-1) + inner + strings.Repeat(closer, tc.n-1)
			if got, want := Valid([]byte(doc)), json.Valid([]byte(doc)); got != want {
				t.Errorf("%s, %s: Valid = %v, json.Valid says %v", tc.name, open, got, want)
			}
		}
	}
}

type kv struct{ key, value string }

// members is what encoding/json's Decoder reads from an object: keys
// unescaped, values as written.
func members(t *testing.T, b []byte) ([]kv, bool) {
	t.Helper()
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil || bytes.TrimSpace(b)[0] != '{' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var out []kv
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, kv{k.(string), string(v)})
	}
	return out, true
}

func checkObject(t *testing.T, b []byte) {
	var got []kv
	ok := Object(b, func(key, value []byte) bool {
		var k string
		if err := json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k); err != nil {
			t.Fatalf("Object(%q): key %q does not decode: %v", b, key, err)
		}
		got = append(got, kv{k, string(value)})
		return true
	})
	want, wantOK := members(t, b)
	if ok != wantOK {
		t.Fatalf("Object(%q) reports %v, encoding/json %v", b, ok, wantOK)
	}
	if ok && !equalMembers(got, want) {
		t.Fatalf("Object(%q) = %q, encoding/json %q", b, got, want)
	}
}

func equalMembers(a, b []kv) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func checkArray(t *testing.T, b []byte) {
	var got []string
	ok := Array(b, func(elem []byte) bool {
		got = append(got, string(elem))
		return true
	})
	var want []json.RawMessage
	wantOK := json.Unmarshal(b, &want) == nil && bytes.TrimSpace(b)[0] == '['
	if ok != wantOK {
		t.Fatalf("Array(%q) reports %v, encoding/json %v", b, ok, wantOK)
	}
	if !ok {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("Array(%q) = %q, encoding/json %q", b, got, want)
	}
	for i := range got {
		if got[i] != string(want[i]) {
			t.Fatalf("Array(%q) = %q, encoding/json %q", b, got, want)
		}
	}
}

func TestObjectAndArray(t *testing.T) {
	for _, s := range corpus {
		checkObject(t, []byte(s))
		checkArray(t, []byte(s))
	}
	// fn's false stops the walk.
	n := 0
	if Object([]byte(`{"a":1,"b":2}`), func(_, _ []byte) bool { n++; return false }) || n != 1 {
		t.Errorf("Object went on after fn said stop (%d members seen)", n)
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{`"plain"`, "plain", true},
		{`""`, "", true},
		{`"é"`, "é", true},
		{`"a\nb"`, "", false},
		{"\"\xff\"", "", false},
		{`5`, "", false},
		{`null`, "", false},
	} {
		got, ok := String([]byte(tc.in))
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("String(%s) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if ok {
			var s string
			if err := json.Unmarshal([]byte(tc.in), &s); err != nil || s != string(got) {
				t.Errorf("String(%s) = %q; encoding/json decodes %q (%v)", tc.in, got, s, err)
			}
		}
	}
}

func TestPlain(t *testing.T) {
	names := []string{"id", "method"}
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"id", true}, {"jsonrpc", true}, {"ID", false}, {"Method", false}, {`m\u0065thod`, false}, {"méthode", false}, {"other", true},
	} {
		if got := Plain([]byte(tc.key), names...); got != tc.want {
			t.Errorf("Plain(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range corpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
		checkObject(t, b)
		checkArray(t, b)
	})
}

func BenchmarkValid(b *testing.B) {
	doc := []byte(`{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"The weather in Paris is 18 degrees and sunny, with a light breeze from the west."}],"structuredContent":{"temperature":18,"conditions":"sunny","wind":{"speed":12.5,"direction":"W"}},"isError":false}}`)
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			json.Valid(doc)
		}
	})
	b.Run("jsonscan", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			Valid(doc)
		}
	})
}

func TestFields(t *testing.T) {
	names := []string{"id", "method"}
	for _, tc := range []struct {
		doc  string
		want []string // "field=value" as fn saw them
		ok   bool
	}{
		{`{"id":1,"method":"m","other":[1]}`, []string{"id=1", `method="m"`}, true},
		{`{"other":{"id":2}}`, nil, true},
		{`{"id":1,"id":2}`, []string{"id=1"}, false},      // twice: encoding/json decodes into the field again
		{`{"ID":1}`, nil, false},                          // matches only without regard to case
		{`{"\u0069d":1}`, nil, false},                     // escaped
		{`{"id":1,"méthode":2}`, []string{"id=1"}, false}, // not ASCII: Unicode folding is encoding/json's
		{`{"id":1`, []string{"id=1"}, false},
		{`[1]`, nil, false},
	} {
		var got []string
		ok := Fields([]byte(tc.doc), names, func(field int, v []byte) bool {
			got = append(got, names[field]+"="+string(v))
			return true
		})
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("Fields(%s) = %q, %v; want %q, %v", tc.doc, got, ok, tc.want, tc.ok)
		}
	}
	if Fields([]byte(`{"id":1}`), names, func(int, []byte) bool { return false }) {
		t.Error("Fields went on after fn said stop")
	}
}

func TestBool(t *testing.T) {
	for _, tc := range []struct {
		in        string
		value, ok bool
	}{{"true", true, true}, {"false", false, true}, {"null", false, false}, {`"true"`, false, false}, {"1", false, false}} {
		if v, ok := Bool([]byte(tc.in)); v != tc.value || ok != tc.ok {
			t.Errorf("Bool(%s) = %v, %v; want %v, %v", tc.in, v, ok, tc.value, tc.ok)
		}
	}
}
