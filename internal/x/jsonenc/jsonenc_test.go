package jsonenc

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

var cases = []string{"", "plain", "q\"b\\", "\n\r\t\b\f\x00\x1f", "é中\u2028\u2029", "bad \xff\xfe utf8", "<&>"}

// short: what encoding/json writes (HTML escaping off); not short: what
// log/slog's JSON handler writes for a string value.
func TestAppendStringMatchesStdlib(t *testing.T) {
	for _, s := range cases {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got, want := string(AppendString(nil, s, true)), strings.TrimSuffix(buf.String(), "\n"); got != want {
			t.Errorf("short %q: %s, encoding/json %s", s, got, want)
		}
		buf.Reset()
		slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key != "v" {
				return slog.Attr{}
			}
			return a
		}})).Info("", "v", s)
		want := strings.TrimSuffix(strings.TrimPrefix(buf.String(), `{"v":`), "}\n")
		if got := string(AppendString(nil, s, false)); got != want {
			t.Errorf("slog %q: %s, log/slog %s", s, got, want)
		}
	}
}
