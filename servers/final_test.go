package servers

import "testing"

// TestDecodeResultFinal: a tool error whose _meta marks it final
// ("toolhub/final": true) is decoded as Final, on the typed pass and on
// mcp-go's; the mark alone, without isError, is not.
func TestDecodeResultFinal(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      bool
	}{
		{"typed pass", `{"content":[{"type":"text","text":"refused"}],"isError":true,"_meta":{"toolhub/final":true}}`, true},
		{"mcp-go's pass", `{"content":[{"type":"resource_link","uri":"https://example.invalid/a","name":"a"}],"isError":true,"_meta":{"toolhub/final":true}}`, true},
		{"not marked", `{"content":[{"type":"text","text":"busy"}],"isError":true}`, false},
		{"marked, not an error", `{"content":[{"type":"text","text":"ok"}],"_meta":{"toolhub/final":true}}`, false},
	} {
		r, err := decodeResult([]byte(tc.raw))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.Final != tc.want {
			t.Errorf("%s: Final = %v, want %v", tc.name, r.Final, tc.want)
		}
	}
}
