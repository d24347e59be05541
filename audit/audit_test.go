package audit_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/toolhub/toolhub/audit"
	"github.com/toolhub/toolhub/audit/audittest"
)

func TestFile(t *testing.T) {
	paths := map[audit.Log]string{}
	audittest.Run(t,
		func(t *testing.T) audit.Log {
			p := filepath.Join(t.TempDir(), "audit.jsonl")
			l := audit.NewFile(p)
			paths[l] = p
			return l
		},
		func(t *testing.T, l audit.Log) audit.Log { return audit.NewFile(paths[l]) },
	)
}

func TestSanitize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"nothing secret kept byte for byte", `{"b": 1,  "a": "x"}`, `{"b": 1,  "a": "x"}`},
		{"literal header", `{"headers":{"Authorization":"Bearer abc"}}`, `{"headers":{"Authorization":"[redacted]"}}`},
		{"env reference kept", `{"headers":{"Authorization":"Bearer ${K}"}}`, `{"headers":{"Authorization":"Bearer ${K}"}}`},
		{"env values are all secret", `{"env":{"API_KEY":"s3cr3t","HOME":"/x","K":"${TOOLHUB_VENDOR_X_K}"}}`, `{"env":{"API_KEY":"[redacted]","HOME":"[redacted]","K":"${TOOLHUB_VENDOR_X_K}"}}`},
		// Issue 12, defect 12: headers the secret-name pattern does not know,
		// and literal text next to a reference.
		{"unknown header names", `{"headers":{"Ocp-Apim-Subscription-Key":"abc123","X-Access-Key":"k-1","X-Custom":"v"}}`,
			`{"headers":{"Ocp-Apim-Subscription-Key":"[redacted]","X-Access-Key":"[redacted]","X-Custom":"[redacted]"}}`},
		{"allow-listed header kept", `{"headers":{"Accept":"application/json","User-Agent":"vx/1"}}`, `{"headers":{"Accept":"application/json","User-Agent":"vx/1"}}`},
		{"literal next to a reference", `{"headers":{"Authorization":"Bearer sk-live-1 ${K}"}}`, `{"headers":{"Authorization":"[redacted]${K}"}}`},
		{"secret field with a reference", `{"token":"abc${K}def"}`, `{"token":"[redacted]${K}[redacted]"}`},
		{"url password and query", `{"mcp":{"url":"https://u:pw@v.example/mcp?key=sk1&ref=${K}"}}`, `{"mcp":{"url":"https://u:[redacted]@v.example/mcp?key=[redacted]\u0026ref=${K}"}}`},
		{"numbers are no secret", `{"probe":{"args":{"max_tokens":5}}}`, `{"probe":{"args":{"max_tokens":5}}}`},
		{"not JSON", `{`, `"[redacted]: not JSON"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := audit.Sanitize(audit.Entry{After: json.RawMessage(tt.in)}).After
			if string(got) != tt.want {
				t.Errorf("Sanitize(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}
