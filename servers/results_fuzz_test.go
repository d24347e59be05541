package servers

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/internal/x/jsonscan"
)

// FuzzResultValidatedIsSent is the differential fuzz target of a vendor's
// tools/call result (issue 32, item 1): for any result bytes the hub takes
// (decodeResult, then repeatedKeys), what it validates — Structured and
// IsError, decoded with encoding/json — is what every reader of the bytes
// it sends on reads: a reader that picks members by exact name and keeps
// the last (a JavaScript client's JSON.parse; api's splice), one that keeps
// the first, and one that matches names without regard to case (a Go
// client decoding into a struct). Content must read the same to all three.
func FuzzResultValidatedIsSent(f *testing.F) {
	for _, s := range append(append([]string{}, decodeSeeds...), scanSeeds...) {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"n":"NOT-AN-INT"},"StructuredContent":{"n":1}}`,
		`{"content":[{"type":"text","text":"a"}],"Content":[{"type":"text","text":"b"}]}`,
		`{"content":[],"structuredContent":{"n":1,"n":2}}`,
		`{"content":[{"type":"text","text":"a","Text":"b"}]}`,
		`{"content":[],"isError":true,"IsError":false}`,
		`{"content":[],"structured\u0043ontent":{"a":[{"b":1,"\u0062":2}]}}`,
		`{"content":[],"\u212aey":1,"key":2,"structuredContent":{"\u212a":1,"k":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		res, err := decodeResult(raw)
		if err != nil || repeatedKeys("fz", "t", res.Raw) != nil {
			return
		}
		validated := map[string]any{"structuredContent": res.Structured, "isError": res.IsError}
		var contents []any
		for name, read := range map[string]func([]byte) (structured any, isError bool, content any){
			"exact, last": readExactLast, "exact, first": readExactFirst, "case folded": readFolded,
		} {
			s, isErr, content := read(res.Raw)
			if d := cmp.Diff(validated, map[string]any{"structuredContent": s, "isError": isErr}); d != "" {
				t.Fatalf("%s: a reader (%s) of the bytes sent reads other than what was validated (-validated +read):\n%s", raw, name, d)
			}
			contents = append(contents, content)
		}
		for _, c := range contents[1:] {
			if d := cmp.Diff(contents[0], c); d != "" {
				t.Fatalf("%s: readers of the bytes sent read different content:\n%s", raw, d)
			}
		}
	})
}

func readExactLast(raw []byte) (any, bool, any) {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	var s, content any
	var isErr bool
	_ = json.Unmarshal(m["structuredContent"], &s)
	_ = json.Unmarshal(m["isError"], &isErr)
	_ = json.Unmarshal(m["content"], &content)
	return s, isErr, content
}

func readFolded(raw []byte) (any, bool, any) {
	var w struct {
		StructuredContent any  `json:"structuredContent"`
		IsError           bool `json:"isError"`
		Content           any  `json:"content"`
	}
	_ = json.Unmarshal(raw, &w)
	return w.StructuredContent, w.IsError, w.Content
}

func readExactFirst(raw []byte) (any, bool, any) {
	v, _ := firstWins(raw).(map[string]any)
	isErr, _ := v["isError"].(bool)
	return v["structuredContent"], isErr, v["content"]
}

// firstWins decodes a JSON value keeping the first of two members with the
// same key (after escapes), where encoding/json keeps the last.
func firstWins(b []byte) any {
	obj := map[string]any{}
	if jsonscan.Object(b, func(key, v []byte) bool {
		var k string
		if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) != nil {
			return false
		}
		if _, seen := obj[k]; !seen {
			obj[k] = firstWins(v)
		}
		return true
	}) {
		return obj
	}
	var arr []any
	if jsonscan.Array(b, func(elem []byte) bool { arr = append(arr, firstWins(elem)); return true }) {
		if arr == nil {
			arr = []any{}
		}
		return arr
	}
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}
