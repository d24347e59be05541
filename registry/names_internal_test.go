package registry

import (
	"regexp"
	"strings"
	"testing"
)

// validVendorID is the regular expression it replaced, written by hand.
func TestValidVendorIDMatchesItsExpression(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)
	ids := []string{"", "a", "-", "a-", "-a", "a-b", "weather-a", "A", "a_b", "a.b", "é", "a--b", "0",
		strings.Repeat("a", 32), strings.Repeat("a", 33), "a" + strings.Repeat("-", 30) + "b", "a\n", "a b"}
	for _, id := range ids {
		if got, want := validVendorID(id), re.MatchString(id); got != want {
			t.Errorf("validVendorID(%q) = %v, the expression says %v", id, got, want)
		}
	}
}
