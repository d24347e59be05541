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
		{"env value", `{"env":{"API_KEY":"s3cr3t","HOME":"/x"}}`, `{"env":{"API_KEY":"[redacted]","HOME":"/x"}}`},
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
