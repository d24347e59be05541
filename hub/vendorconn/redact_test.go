package vendorconn

import (
	"strings"
	"testing"
)

func TestRedactor(t *testing.T) {
	r := &Redactor{}
	got, err := r.Expand("Bearer ${A} and ${B}", func(k string) (string, bool) {
		return map[string]string{"A": "alpha/secret+1", "B": "xy"}[k], true
	})
	if err != nil || got != "Bearer alpha/secret+1 and xy" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
	for in, want := range map[string]string{
		"token alpha/secret+1 here":  "token [redacted] here",
		"url ?k=alpha%2Fsecret%2B1":  "url ?k=[redacted]",
		"short values stay: xy, xyz": "short values stay: xy, xyz",
	} {
		if got := r.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q; want %q", in, got, want)
		}
	}
	if _, err := r.Expand("${MISSING}", nil); err == nil || !strings.Contains(err.Error(), "MISSING") {
		t.Errorf("missing variable: %v", err)
	}
	var none *Redactor
	if got := none.Redact("alpha/secret+1"); got != "alpha/secret+1" {
		t.Errorf("a nil Redactor: %q", got)
	}
}
