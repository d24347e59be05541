package billing_test

import (
	"testing"

	"github.com/toolhub/toolhub/billing"
)

// FuzzParseMicros: whatever parses formats back to the same amount.
func FuzzParseMicros(f *testing.F) {
	for _, s := range []string{"0.0025", "12", "-1.5", ".5", "1.", "9223372036854.775807", "1e3", " 2 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := billing.ParseMicros(s)
		if err != nil {
			return
		}
		back, err := billing.ParseMicros(m.String())
		if err != nil || back != m {
			t.Fatalf("%q → %v → %q → %v, %v", s, int64(m), m.String(), int64(back), err)
		}
	})
}
