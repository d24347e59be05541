package cache_test

import (
	"bytes"
	"testing"

	"github.com/toolhub/toolhub/hub/cache"
)

// FuzzDecode: a corrupt entry is an error, never a panic, and what decodes
// re-encodes to a fixed point.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}],"structured":{"a":1}}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"resource_link","uri":"u","name":"n","size":3}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"u","blob":"AA=="}}],"isError":true}`,
		`{"content":[{"type":"resource"}]}`, `{"content":[{"type":"nope"}]}`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := cache.Decode(b)
		if err != nil {
			return
		}
		e1, err := cache.Encode(r)
		if err != nil {
			return // e.g. NaN cannot come from JSON, but stay lenient
		}
		r2, err := cache.Decode(e1)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", e1, err)
		}
		e2, _ := cache.Encode(r2)
		if !bytes.Equal(e1, e2) {
			t.Fatalf("not a fixed point:\n%s\n%s", e1, e2)
		}
	})
}
