package registry

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Bounds on what a vendor sends and sets. A vendor is a third party: every
// list, string and rate it controls is bounded here, and docs/vendors.md
// and docs/security.md list them.
const (
	// MaxVendorTools bounds the tools one vendor lists; a longer list fails
	// the tool sync (the catalog keeps the tools it had).
	MaxVendorTools = 1000
	// MaxToolNameBytes bounds a tool's own name.
	MaxToolNameBytes = 256
	// MaxTitleBytes bounds a tool's title.
	MaxTitleBytes = 1 << 10
	// MaxDescriptionBytes bounds a tool's description; a tool with a longer
	// one is left out (its other fields are not kept).
	MaxDescriptionBytes = 16 << 10
	// MaxAnnotationsBytes bounds a tool's annotations (raw JSON).
	MaxAnnotationsBytes = 16 << 10
	// MaxVendorCatalogBytes bounds the sum of the definitions (name, title,
	// description, schemas, annotations) of one vendor's tools; past it the
	// tool sync fails and the catalog keeps the tools it had.
	MaxVendorCatalogBytes = 4 << 20

	// MinProbeInterval is the floor of probe.interval in any spec (the
	// config file included).
	MinProbeInterval = 100 * time.Millisecond
	// MinSelfServiceProbeInterval is the floor of probe.interval in a spec
	// a vendor key registers.
	MinSelfServiceProbeInterval = time.Second
	// MaxVendorTimeout bounds a vendor's timeout.
	MaxVendorTimeout = 10 * time.Minute
	// MaxHeaders bounds the headers of a spec; MaxHeaderBytes one header's
	// name plus value.
	MaxHeaders     = 32
	MaxHeaderBytes = 8 << 10
	// MaxURLBytes bounds a spec's URL.
	MaxURLBytes = 2 << 10
	// MaxSpecListLen bounds the other lists and maps of a spec (classes,
	// tool_breakers, redact, probe.expect, stdio args and env).
	MaxSpecListLen = 256
	// MaxNameBytes bounds a vendor's display name.
	MaxNameBytes = 256
	// MaxVendorMessageBytes bounds the text of a vendor's JSON-RPC error
	// message kept and shown (longer ones are cut); a quarter of it bounds
	// the server name and version a vendor gives at initialize.
	MaxVendorMessageBytes = 1 << 10
)

// ErrCatalogTooLarge is the cause of a tool sync refused because the
// vendor's tools are over [MaxVendorTools] or [MaxVendorCatalogBytes].
var ErrCatalogTooLarge = errors.New("registry: vendor catalog over its bound")

// DefBytes is what a tool definition counts against
// [MaxVendorCatalogBytes].
func DefBytes(d ToolDef) int {
	return len(d.Name) + len(d.Title) + len(d.Description) + len(d.InputSchema) + len(d.OutputSchema) + len(d.Annotations)
}

// CheckToolDef checks the sizes of a vendor's tool definition against the
// bounds above (schemas are checked when compiled). The error is a
// *ToolError naming vendor, tool, field and limit.
func CheckToolDef(vendor string, d ToolDef) error {
	name := d.Name
	if len(name) > 64 {
		name = strings.ToValidUTF8(name[:32], "") + "…"
	}
	bad := func(part string, n, limit int) error {
		return &ToolError{Vendor: vendor, Tool: name, Part: part, Err: fmt.Errorf("%d bytes, over the %d-byte limit", n, limit)}
	}
	switch {
	case len(d.Name) > MaxToolNameBytes:
		return bad("name", len(d.Name), MaxToolNameBytes)
	case len(d.Title) > MaxTitleBytes:
		return bad("title", len(d.Title), MaxTitleBytes)
	case len(d.Description) > MaxDescriptionBytes:
		return bad("description", len(d.Description), MaxDescriptionBytes)
	case len(d.InputSchema) > MaxSchemaBytes:
		return bad("input schema", len(d.InputSchema), MaxSchemaBytes)
	case len(d.OutputSchema) > MaxSchemaBytes:
		return bad("output schema", len(d.OutputSchema), MaxSchemaBytes)
	case len(d.Annotations) > MaxAnnotationsBytes:
		return bad("annotations", len(d.Annotations), MaxAnnotationsBytes)
	}
	return nil
}

// CheckCatalog checks a vendor's whole tool list against [MaxVendorTools]
// and [MaxVendorCatalogBytes].
func CheckCatalog(vendor string, defs []ToolDef) error {
	if len(defs) > MaxVendorTools {
		return fmt.Errorf("%w: vendor %q lists %d tools, over the limit of %d", ErrCatalogTooLarge, vendor, len(defs), MaxVendorTools)
	}
	n := 0
	for _, d := range defs {
		n += DefBytes(d)
	}
	if n > MaxVendorCatalogBytes {
		return fmt.Errorf("%w: vendor %q's tool definitions are %d bytes, over the %d-byte limit", ErrCatalogTooLarge, vendor, n, MaxVendorCatalogBytes)
	}
	return nil
}

// validateBounds checks the sizes of a spec's fields: part of
// [Vendor.Validate].
func (v *Vendor) validateBounds(add func(format string, args ...any)) {
	if len(v.Name) > MaxNameBytes {
		add("name: %d bytes, over the %d-byte limit", len(v.Name), MaxNameBytes)
	}
	headers := func(where string, h map[string]string) {
		if len(h) > MaxHeaders {
			add("%s: headers: %d, over the limit of %d", where, len(h), MaxHeaders)
		}
		for k, val := range h {
			if len(k)+len(val) > MaxHeaderBytes {
				add("%s: header %q: %d bytes, over the %d-byte limit", where, truncName(k), len(k)+len(val), MaxHeaderBytes)
			}
		}
	}
	list := func(field string, n int) {
		if n > MaxSpecListLen {
			add("%s: %d entries, over the limit of %d", field, n, MaxSpecListLen)
		}
	}
	if m := v.MCP; m != nil {
		if len(m.URL) > MaxURLBytes {
			add("mcp: url: %d bytes, over the %d-byte limit", len(m.URL), MaxURLBytes)
		}
		headers("mcp", m.Headers)
		list("mcp: args", len(m.Args))
		list("mcp: env", len(m.Env))
	}
	if a := v.A2A; a != nil {
		if len(a.Card) > MaxURLBytes {
			add("a2a: card: %d bytes, over the %d-byte limit", len(a.Card), MaxURLBytes)
		}
		headers("a2a", a.Headers)
	}
	if v.Timeout.D() > MaxVendorTimeout {
		add("timeout %v: over the limit of %v", v.Timeout.D(), MaxVendorTimeout)
	}
	list("classes", len(v.Classes))
	list("tool_breakers", len(v.ToolBreakers))
	list("redact", len(v.Redact))
	if p := v.Probe; p != nil {
		if p.Interval > 0 && p.Interval.D() < MinProbeInterval {
			add("probe: interval %v: under the floor of %v", p.Interval.D(), MinProbeInterval)
		}
		list("probe: expect", len(p.Expect))
		list("probe: args", len(p.Args))
	}
}

// ValidateSelfService checks what a vendor key may not set in its own
// spec beyond [Vendor.Validate]: a probe interval under
// [MinSelfServiceProbeInterval], or a pin policy looser than strict (a
// vendor does not decide which of its own changes an operator sees).
func (v *Vendor) ValidateSelfService() error {
	if v.Pin != "" && v.Pin != PinStrict {
		return fmt.Errorf("vendor %q: pin %q: only an operator loosens a vendor's pin policy; a vendor key may set pin: strict or leave it out", v.ID, v.Pin)
	}
	if p := v.Probe; p != nil && p.Interval > 0 && p.Interval.D() < MinSelfServiceProbeInterval {
		return fmt.Errorf("vendor %q: probe: interval %v: under the floor of %v for a vendor's own registration", v.ID, p.Interval.D(), MinSelfServiceProbeInterval)
	}
	return nil
}

// CheckOwnEnvRefs checks that every ${VAR} the spec refers to, wherever
// one is expanded ([Vendor.EnvRefs]), is one of the vendor's own
// variables ([VendorEnvPrefix]); the error names the first that is not.
func (v *Vendor) CheckOwnEnvRefs() error {
	prefix := VendorEnvPrefix(v.ID)
	for _, ref := range v.EnvRefs() {
		if !strings.HasPrefix(ref, prefix) {
			return fmt.Errorf("vendor %q: refers to ${%s}: a vendor may only refer to variables named %s*, which an operator sets for it", v.ID, ref, prefix)
		}
	}
	return nil
}

func truncName(s string) string {
	if len(s) <= 64 {
		return s
	}
	return strings.ToValidUTF8(s[:64], "") + "…"
}

// SafeHeaders are the headers whose values are shown as they are in the
// audit log and every status surface; every other header's value is
// treated as a secret ([MaskValue]).
var SafeHeaders = []string{"Accept", "Accept-Language", "Content-Type", "User-Agent", "A2a-Version", "Mcp-Protocol-Version", "Cache-Control"}

// Masked replaces a secret value's literal text.
const Masked = "[redacted]"

var maskRefRE = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// schemeRE is literal text kept around ${VAR} references: an
// authorization scheme, not a secret.
var schemeRE = regexp.MustCompile(`(?i)^\s*(bearer|basic|token|apikey|digest)?\s*$`)

// MaskValue hides the literal text of a secret value, keeping its ${VAR}
// references (which name a variable, not its value) and an authorization
// scheme before them: "Bearer ${KEY}" stays, "sk-123" and "sk-123${KEY}"
// become "[redacted]" and "[redacted]${KEY}".
func MaskValue(s string) string {
	if s == "" || s == Masked {
		return s
	}
	var b strings.Builder
	last := 0
	for i, loc := range maskRefRE.FindAllStringIndex(s, -1) {
		if lit := s[last:loc[0]]; lit != "" {
			if strings.TrimSpace(lit) == "" || i == 0 && schemeRE.MatchString(lit) {
				b.WriteString(lit)
			} else {
				b.WriteString(Masked)
			}
		}
		b.WriteString(s[loc[0]:loc[1]])
		last = loc[1]
	}
	if last < len(s) {
		b.WriteString(Masked)
	}
	return b.String()
}

// MaskHeaders returns h with every value but those of [SafeHeaders]
// masked ([MaskValue]); nil for nil.
func MaskHeaders(h map[string]string) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		if isSafeHeader(k) {
			out[k] = v
			continue
		}
		out[k] = MaskValue(v)
	}
	return out
}

func isSafeHeader(k string) bool {
	for _, s := range SafeHeaders {
		if strings.EqualFold(s, k) {
			return true
		}
	}
	return false
}

// MaskURL hides a URL's password and the values of its query parameters
// (keeping ${VAR} references); a URL that does not parse is kept as it is
// unless it has a "@" or "?", then masked whole.
func MaskURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if strings.ContainsAny(s, "@?") {
			return Masked
		}
		return s
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Masked)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k, vs := range q {
			for i := range vs {
				vs[i] = MaskValue(vs[i])
			}
			q[k] = vs
		}
		u.RawQuery = q.Encode()
	}
	out := u.String()
	// Keep ${VAR} readable: url.String escapes the braces.
	return strings.NewReplacer("%7B", "{", "%7D", "}", "%24", "$", "%5B", "[", "%5D", "]").Replace(out)
}

// Masked returns a copy of v safe to show: the values of its headers (but
// [SafeHeaders]), its stdio environment and its URLs' passwords and query
// values are masked ([MaskValue]); ${VAR} references stay.
func (v Vendor) Masked() Vendor {
	c := v.Clone()
	if m := c.MCP; m != nil {
		m.Headers = MaskHeaders(m.Headers)
		if m.Env != nil {
			for k, val := range m.Env {
				m.Env[k] = MaskValue(val)
			}
		}
		if m.URL != "" {
			m.URL = MaskURL(m.URL)
		}
	}
	if a := c.A2A; a != nil {
		a.Headers = MaskHeaders(a.Headers)
		a.Card = MaskURL(a.Card)
	}
	return c
}
