package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes as text ("5s", "250ms")
// in JSON and YAML.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: want a number with a unit, like \"5s\" or \"250ms\"", b)
	}
	*d = Duration(v)
	return nil
}

// Transports of an MCP vendor.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // streamable HTTP
	TransportSSE   = "sse"  // legacy HTTP+SSE
)

// Kinds of vendor.
const (
	KindMCP = "mcp"
	KindA2A = "a2a"
)

// Vendor is a third-party supplier of tools: an MCP server or an A2A agent.
// A Vendor is a spec; its tools are discovered from the vendor at run time.
type Vendor struct {
	ID   string `json:"id" yaml:"id"`                         // lowercase [a-z0-9-]
	Name string `json:"name,omitempty" yaml:"name,omitempty"` // display name; zero means the id

	MCP *MCPSpec `json:"mcp,omitempty" yaml:"mcp,omitempty"`
	A2A *A2ASpec `json:"a2a,omitempty" yaml:"a2a,omitempty"`

	// Timeout bounds one upstream call; zero means the hub's default (5 s).
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// Limits protects the vendor's own quota; zero fields mean unlimited.
	Limits Limits `json:"limits,omitzero" yaml:"limits,omitempty"`
	// Disabled vendors stay registered but take no calls.
	Disabled bool `json:"disabled,omitempty" yaml:"disabled,omitempty"`
	// Classes puts tools in timeout classes ("simple", "complex", "long"),
	// by the tool's own name; a classed tool's timeout comes from the
	// hub's class table instead of Timeout.
	Classes map[string]string `json:"classes,omitempty" yaml:"classes,omitempty"`
	// Keywords help the offline planner find the vendor's tools: by the
	// tool's own name, words a user may say for it, in any language
	// (e.g. {current_weather: [天气, weather, forecast]}).
	Keywords map[string][]string `json:"keywords,omitempty" yaml:"keywords,omitempty"`
	// ToolBreakers lists tools (own names) that get a circuit breaker of
	// their own besides the vendor's, so one failing tool stops alone.
	ToolBreakers []string `json:"tool_breakers,omitempty" yaml:"tool_breakers,omitempty"`
	// Probe is the vendor's health probe; nil means an MCP ping.
	Probe *Probe `json:"probe,omitempty" yaml:"probe,omitempty"`
	// MaxDataLevel is the most sensitive data the vendor may receive: 0
	// public (the default), 1 preferences, 2 location and contacts, 3
	// biometrics and passwords.
	MaxDataLevel int `json:"max_data_level,omitempty" yaml:"max_data_level,omitempty"`
	// Redact names the redaction rules (privacy.rules) applied to every
	// string argument sent to this vendor, e.g. [phone, national_id].
	Redact []string `json:"redact,omitempty" yaml:"redact,omitempty"`
	// ResultScan scans the text content and the structuredContent
	// strings of the vendor's results for
	// instructions aimed at the model (the rules of registry/poison) and
	// marks a result with findings: _meta["toolhub/findings"] (MCP),
	// "findings" (REST) and the decision log. The result itself is never
	// changed. Off by default.
	ResultScan bool `json:"result_scan,omitempty" yaml:"result_scan,omitempty"`
	// Pin is the vendor's pin policy: which differences from its tools'
	// pinned versions wait for an operator: "strict" (any difference in
	// name, title, description, annotations or schemas, and new tools),
	// "schema" (annotations, schemas and new tools only) or "off" (none).
	// "": strict for a vendor registered through the API, off for one
	// declared in the config file (its operator wrote it).
	Pin string `json:"pin,omitempty" yaml:"pin,omitempty"`
	// Listing is the vendor's MCP Registry entry when it registered by
	// publishing a server.json (POST /v0.1/publish): the document without
	// its remotes and packages, shown by toolhub's registry API. Nil for
	// a vendor registered otherwise.
	Listing json.RawMessage `json:"listing,omitempty" yaml:"-"`
}

// MaxDataLevel is the highest privacy level (L3).
const MaxDataLevel = 3

// Timeout classes of tools.
var ToolClasses = []string{"simple", "complex", "long"}

// Probe is a business-level health check: a call of one of the vendor's
// tools whose answer must have the expected shape.
type Probe struct {
	Tool     string         `json:"tool,omitempty" yaml:"tool,omitempty"`         // the vendor's own tool name; "" means an MCP ping
	Args     map[string]any `json:"args,omitempty" yaml:"args,omitempty"`         // its arguments
	Expect   []string       `json:"expect,omitempty" yaml:"expect,omitempty"`     // top-level keys the structured result must have
	Interval Duration       `json:"interval,omitempty" yaml:"interval,omitempty"` // zero: 5s for stdio vendors, 10s for remote ones
	Disabled bool           `json:"disabled,omitempty" yaml:"disabled,omitempty"`
}

// MCPSpec says how to reach an MCP server.
type MCPSpec struct {
	Transport string `json:"transport" yaml:"transport"` // stdio | http | sse

	// stdio
	Command string            `json:"command,omitempty" yaml:"command,omitempty"`
	Args    []string          `json:"args,omitempty" yaml:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty" yaml:"env,omitempty"` // values may say ${VAR}: taken from toolhub's environment at connect time
	Dir     string            `json:"dir,omitempty" yaml:"dir,omitempty"`

	// http, sse
	URL string `json:"url,omitempty" yaml:"url,omitempty"`
	// Headers sent on every request. Put secrets in the environment and
	// refer to them ("Authorization: Bearer ${WEATHER_KEY}"): the spec is
	// stored and shown, the expanded value never is.
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
}

// A2ASpec says how to reach an A2A agent.
type A2ASpec struct {
	Card string `json:"card" yaml:"card"` // URL of the agent card
	// Headers sent with the card fetch and every call to the agent (on
	// the card's and the agent interface's hosts only). Put secrets in the
	// environment and refer to them ("Authorization: Bearer ${AGENT_KEY}"):
	// the spec is stored and shown, the expanded value never is.
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
}

// Limits are a vendor's rate and concurrency limits.
type Limits struct {
	RPS         float64 `json:"rps,omitempty" yaml:"rps,omitempty"`
	Burst       int     `json:"burst,omitempty" yaml:"burst,omitempty"`
	Concurrency int     `json:"concurrency,omitempty" yaml:"concurrency,omitempty"`
}

// DisplayName is the vendor's name, or its id when it has none.
func (v *Vendor) DisplayName() string {
	if v.Name != "" {
		return v.Name
	}
	return v.ID
}

// Kind is KindMCP or KindA2A.
func (v *Vendor) Kind() string {
	if v.A2A != nil {
		return KindA2A
	}
	return KindMCP
}

var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ExpandEnv replaces ${VAR} references in s using lookup. A reference to an
// unset variable is an error naming it (the value is never echoed).
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := envRefRE.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set", strings.Join(missing, ", "))
	}
	return out, nil
}

// EnvRefs lists the environment variables a spec refers to with ${VAR}
// everywhere one is expanded — an MCP url, headers and stdio environment,
// an A2A agent's headers — sorted and without repeats.
func (v *Vendor) EnvRefs() []string {
	var vals []string
	if v.MCP != nil {
		vals = append(vals, v.MCP.URL)
		for _, m := range []map[string]string{v.MCP.Headers, v.MCP.Env} {
			for _, x := range m {
				vals = append(vals, x)
			}
		}
	}
	if v.A2A != nil {
		for _, x := range v.A2A.Headers {
			vals = append(vals, x)
		}
	}
	var refs []string
	for _, x := range vals {
		for _, m := range envRefRE.FindAllStringSubmatch(x, -1) {
			refs = append(refs, m[1])
		}
	}
	slices.Sort(refs)
	return slices.Compact(refs)
}

// VendorEnvPrefix is the prefix of the environment variables a vendor
// registering itself may refer to: "TOOLHUB_VENDOR_WEATHER_A_" for vendor
// weather-a. An operator puts the vendor's secrets there; anything else in
// toolhub's environment (its own keys, other vendors' secrets) is out of a
// vendor's reach, so a spec cannot send them to the vendor's host.
func VendorEnvPrefix(id string) string {
	return "TOOLHUB_VENDOR_" + strings.ToUpper(strings.ReplaceAll(id, "-", "_")) + "_"
}

// Validate checks a vendor spec and says what is wrong with it.
func (v *Vendor) Validate() error {
	if err := ValidateVendorID(v.ID); err != nil {
		return err
	}
	errs := []error{}
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("vendor %q: "+format, append([]any{v.ID}, args...)...))
	}
	switch {
	case v.MCP == nil && v.A2A == nil:
		add("needs an mcp or an a2a section")
	case v.MCP != nil && v.A2A != nil:
		add("has both an mcp and an a2a section; a vendor is one or the other")
	}
	if v.MCP != nil {
		v.MCP.validate(add)
	}
	if v.A2A != nil {
		v.A2A.validate(add)
	}
	if v.Timeout < 0 {
		add("timeout %v is negative", v.Timeout.D())
	}
	if v.Limits.RPS < 0 || v.Limits.Burst < 0 || v.Limits.Concurrency < 0 {
		add("limits must not be negative")
	}
	for tool, class := range v.Classes {
		if !slices.Contains(ToolClasses, class) {
			add("classes: tool %q: class %q is unknown; want one of %v", tool, class, ToolClasses)
		}
	}
	if len(v.Keywords) > 1000 {
		add("keywords: %d tools, over 1000", len(v.Keywords))
	}
	for tool, words := range v.Keywords {
		if err := CheckKeywords(words); err != nil {
			add("keywords: tool %q: %v", tool, err)
		}
	}
	if v.MaxDataLevel < 0 || v.MaxDataLevel > MaxDataLevel {
		add("max_data_level %d: want 0 (public) to 3 (biometrics, passwords)", v.MaxDataLevel)
	}
	if v.Pin != "" && !slices.Contains(PinPolicies, v.Pin) {
		add("pin %q is unknown; want one of %v", v.Pin, PinPolicies)
	}
	if p := v.Probe; p != nil && p.Interval < 0 {
		add("probe: interval %v is negative", p.Interval.D())
	}
	v.validateBounds(add)
	return errors.Join(errs...)
}

// validate checks the mcp section of a spec, adding each fault.
func (m *MCPSpec) validate(add func(format string, args ...any)) {
	switch m.Transport {
	case TransportStdio:
		if m.Command == "" {
			add("mcp: transport stdio needs a command")
		}
		if m.URL != "" {
			add("mcp: transport stdio takes a command, not a url")
		}
	case TransportHTTP, TransportSSE:
		if err := checkURL(m.URL); err != nil {
			add("mcp: %v", err)
		}
		if m.Command != "" {
			add("mcp: transport %s takes a url, not a command", m.Transport)
		}
	case "":
		add("mcp: transport is missing; want stdio, http or sse")
	default:
		add("mcp: transport %q is unknown; want stdio, http or sse", m.Transport)
	}
	for k := range m.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			add("mcp: header name %q is not valid", k)
		}
	}
}

// validate checks the a2a section of a spec, adding each fault.
func (a *A2ASpec) validate(add func(format string, args ...any)) {
	if err := checkURL(a.Card); err != nil {
		add("a2a: card: %v", err)
	}
	for k := range a.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			add("a2a: header name %q is not valid", k)
		}
	}
}

// Bounds of a tool's or capability's planner keywords.
const (
	MaxKeywords      = 64
	MaxKeywordLength = 64
)

// CheckKeywords checks the planner keywords of one tool or capability: at
// most [MaxKeywords], each non-empty and at most [MaxKeywordLength] bytes.
func CheckKeywords(words []string) error {
	if len(words) > MaxKeywords {
		return fmt.Errorf("%d keywords, over %d", len(words), MaxKeywords)
	}
	for _, w := range words {
		if strings.TrimSpace(w) == "" || len(w) > MaxKeywordLength {
			return fmt.Errorf("keyword %q: want 1 to %d bytes of text", w, MaxKeywordLength)
		}
	}
	return nil
}

func checkURL(s string) error {
	if s == "" {
		return errors.New("url is missing")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("url %q: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url %q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return fmt.Errorf("url %q has no host", s)
	}
	return nil
}

// Clone returns a deep copy of v.
func (v Vendor) Clone() Vendor {
	b, _ := json.Marshal(v)
	var c Vendor
	_ = json.Unmarshal(b, &c)
	return c
}
