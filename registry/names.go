package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// MaxNameLen is the longest catalog name: OpenAI function names and most MCP
// clients accept at most 64 characters.
const MaxNameLen = 64

// Separator joins a vendor id and a tool name in a catalog name.
const Separator = "__"

var (
	nameRE       = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	capabilityRE = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*(\.[a-z][a-z0-9]*(_[a-z0-9]+)*)+$`)
	tenantIDRE   = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)
)

// ValidName reports whether s is usable as a catalog (and function-calling) name.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// ValidateVendorID checks a vendor id: lowercase letters, digits and inner
// dashes, at most 32 characters. Vendor ids never contain an underscore, so
// the first "__" of a catalog name always ends the vendor id.
func ValidateVendorID(id string) error {
	if !validVendorID(id) {
		return fmt.Errorf("vendor id %q: want lowercase letters, digits and inner dashes, 1-32 characters (like \"weather-a\")", id)
	}
	return nil
}

// validVendorID reports whether id matches ^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$,
// by hand: the MCP front door checks the vendor of every request's path.
func validVendorID(id string) bool {
	if len(id) == 0 || len(id) > 32 || id[0] == '-' || id[len(id)-1] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ValidateCapabilityName checks a capability name such as "image.generate":
// dot-separated lowercase words (single underscores allowed inside a word).
func ValidateCapabilityName(name string) error {
	if !capabilityRE.MatchString(name) || len(name) > MaxNameLen {
		return fmt.Errorf("capability %q: want dot-separated lowercase words like \"image.generate\", at most %d characters", name, MaxNameLen)
	}
	return nil
}

// ValidateTenantID checks a tenant id.
func ValidateTenantID(id string) error {
	if !tenantIDRE.MatchString(id) {
		return fmt.Errorf("tenant id %q: want letters, digits, '.', '_' or '-', 1-63 characters", id)
	}
	return nil
}

// CatalogName is the name a vendor tool is served under: "vendor__tool".
// When that is not a valid name (too long, or with characters outside
// [a-zA-Z0-9_-]) it is shortened deterministically: odd characters become
// '_', the result is cut to fit, and an 8-hex-digit hash of the exact vendor
// and tool names is appended. The catalog keeps the mapping, so a shortened
// name stays reversible (see [Catalog.Lookup]).
func CatalogName(vendor, tool string) string {
	return catalogName(vendor, tool, 8)
}

func catalogName(vendor, tool string, hashLen int) string {
	full := vendor + Separator + tool
	if hashLen == 8 && ValidName(full) {
		return full
	}
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, full)
	sum := sha256.Sum256([]byte(vendor + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:])[:hashLen]
	if max := MaxNameLen - len(suffix); len(clean) > max {
		clean = clean[:max]
	}
	return clean + suffix
}

// CapabilityCatalogName is the function-calling-safe name of a capability:
// its dots become underscores ("image.generate" → "image_generate"). Both
// forms resolve in the catalog.
func CapabilityCatalogName(name string) string { return strings.ReplaceAll(name, ".", "_") }
