// Package config reads toolhub.yaml: the only place where files and the
// environment are read. Packages get typed structs from here.
package config

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"time"

	"github.com/toolhub/toolhub/auth/oauth"
	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/internal/x/telemetry"
	"github.com/toolhub/toolhub/netguard"
	"github.com/toolhub/toolhub/orchestrator"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/poison"
	"go.yaml.in/yaml/v3"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the embedded default config (the example vendors on
// loopback), used when toolhub runs without --config.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// Catalog says how /mcp offers the catalog.
type Catalog struct {
	// SearchTool adds the search_tools tool to /mcp and defers the
	// catalog behind it: tools/list lists search_tools and the Always
	// tools only (every tool stays callable). Default false: tools/list
	// lists the whole catalog.
	SearchTool bool `yaml:"search_tool"`
	// Always are catalog names (patterns: "weather_*") that tools/list
	// lists besides search_tools.
	Always []string `yaml:"always"`
}

// CatalogScan configures the catalog's poisoning scan.
type CatalogScan struct {
	Disabled bool `yaml:"disabled"` // true: no scan (pins still hold changes)
	// Allow lists findings an operator accepts: {tool: <vendor>__<tool>
	// ("" any), rule: the finding's rule, span: its text ("" any)}.
	Allow []poison.Allow `yaml:"allow"`
}

// Config is toolhub.yaml.
type Config struct {
	Addr         string            `yaml:"addr"`            // listen address; default 127.0.0.1:8080
	Data         string            `yaml:"data"`            // data folder; default ./data
	Redis        string            `yaml:"redis"`           // "" = embedded limits, cache, jobs
	Postgres     string            `yaml:"postgres"`        // "" = embedded registry and ledger (SQLite)
	Schema       string            `yaml:"postgres_schema"` // PostgreSQL schema of the registry and ledger; default "toolhub"
	RedisPrefix  string            `yaml:"redis_prefix"`    // prefix of every Redis key; default "toolhub:" (one per hub cluster)
	MaxBodyBytes int64             `yaml:"max_body_bytes"`  // default 4 MiB
	Timeout      registry.Duration `yaml:"timeout"`         // default vendor timeout; default 5s
	LogLevel     string            `yaml:"log_level"`       // debug, info (default), warn, error
	Examples     *Examples         `yaml:"examples"`        // serve the example vendors in process
	Instances    int               `yaml:"instances"`       // toolhub instances sharing Redis; local fallback limits are rate/instances; default 1
	FailOpen     bool              `yaml:"fail_open"`       // Redis down: admit every call instead of local rate/instances limits
	// CatalogScan is the tool-poisoning scan of vendors' tools before any
	// client sees them (registry/poison): a tool with a finding is held
	// for an operator under GET /v1/admin/vendors/pending.
	CatalogScan CatalogScan `yaml:"catalog_scan"`
	// Catalog says how the catalog is offered to MCP clients.
	Catalog Catalog `yaml:"catalog"`
	// RequireStores makes /readyz answer not ready (503) while Redis or
	// PostgreSQL is away; calls are served either way. Default false:
	// ready on local limits and the write-ahead log.
	RequireStores bool                `yaml:"require_stores"`
	Governance    Governance          `yaml:"governance"`
	Cache         cache.Config        `yaml:"cache"`    // result cache policies per tool / capability
	Fallback      fallback.Config     `yaml:"fallback"` // chain policies, queue, high-risk, degradation thresholds
	Jobs          Jobs                `yaml:"jobs"`
	Billing       billing.Config      `yaml:"billing"` // prices and budgets (docs/finance.md)
	Planner       orchestrator.Config `yaml:"planner"` // goal → tool calls; rules only unless an LLM is configured
	Auth          Auth                `yaml:"auth"`
	Outbound      Outbound            `yaml:"outbound"`
	Privacy       Privacy             `yaml:"privacy"`
	HTTP          HTTP                `yaml:"http"`      // timeouts of the front door (docs/security.md)
	MCP           MCP                 `yaml:"mcp"`       // MCP sessions of the front door (docs/security.md)
	Admin         Admin               `yaml:"admin"`     // what the admin API may do
	Telemetry     telemetry.Config    `yaml:"telemetry"` // OpenTelemetry traces (docs/operations.md); OTEL_* variables win
	Meter         Meter               `yaml:"meter"`     // the usage write-ahead log (docs/operations.md)

	Vendors      []registry.Vendor `yaml:"vendors"`
	Capabilities []Capability      `yaml:"capabilities"`
	Tenants      []registry.Tenant `yaml:"tenants"`
}

// Meter tunes the usage meter's write-ahead log.
type Meter struct {
	// Sync is when the log is fsynced: "batch" (the default: a call that
	// returned survives a kill -9 of toolhub, not a power loss in the
	// seconds after it) or "always" (each batch of calls fsynced before
	// any of them returns: survives a power loss). See docs/operations.md.
	Sync string `yaml:"sync"`
}

// Jobs tunes the durable async job queue (SQLite in the data folder, or
// Redis Streams when redis is set).
type Jobs struct {
	Workers     int               `yaml:"workers"`      // concurrent jobs per instance; default 4
	MaxAttempts int               `yaml:"max_attempts"` // also fail a job after this many tries; default 0: only the deadline ends it
	Deadline    registry.Duration `yaml:"deadline"`     // how long a queued job lives (tried, or waiting for a vendor); default 15m; per capability: fallback.capabilities.X.queue.deadline
	ResultTTL   registry.Duration `yaml:"result_ttl"`   // how long a finished job's result is kept; default 24h
	Lease       registry.Duration `yaml:"lease"`        // a running job returns to the queue this long after its worker died; default 30s
	// Webhooks push each job's final event (its result, or its failure) to
	// a tenant, signed; tenants can also register one with PUT /v1/webhook
	// (that one wins).
	Webhooks []Webhook `yaml:"webhooks"`
}

// Webhook is where a tenant's job results are POSTed.
type Webhook struct {
	Tenant string `yaml:"tenant"`
	URL    string `yaml:"url"`    // http or https, through the outbound guard
	Secret string `yaml:"secret"` // HMAC-SHA256 key of X-Toolhub-Signature (16+ characters); ${VAR} reads the environment
}

// Auth switches API keys on. Off, toolhub serves loopback only and every
// caller is tenant "default" with operator rights.
type Auth struct {
	Enabled bool `yaml:"enabled"`
	// OAuth accepts JWT access tokens from trusted issuers besides API
	// keys (MCP authorization; docs/operations.md). Off when empty.
	OAuth oauth.Config `yaml:"oauth"`
}

// HTTP bounds the front door's connections and requests. Zero fields
// mean the defaults; changes need a restart.
type HTTP struct {
	ReadHeaderTimeout registry.Duration `yaml:"read_header_timeout"` // request line and headers; default 10s
	ReadTimeout       registry.Duration `yaml:"read_timeout"`        // the whole request body; default 30s
	WriteTimeout      registry.Duration `yaml:"write_timeout"`       // the whole answer (streams exempt); default 5m
	IdleTimeout       registry.Duration `yaml:"idle_timeout"`        // a keep-alive connection between requests; default 2m
}

// MCP bounds the sessions of the MCP front door (/mcp, /mcp/vendors/{id}):
// a client on a protocol revision before 2026-07-28 keeps one from
// initialize until it ends it or it is idle too long. Zero fields mean the
// defaults; changes need a restart.
type MCP struct {
	MaxSessionsPerKey  int               `yaml:"max_sessions_per_key"` // open sessions of one key; default 1000; one more initialize: 429
	MaxSessions        int               `yaml:"max_sessions"`         // open sessions of this instance; default 10000; one more: 503
	SessionIdleTimeout registry.Duration `yaml:"session_idle_timeout"` // a session no request used this long ends (then 404); default 10m
}

// Admin bounds what the admin API (vendor self-service, operator keys)
// may do.
type Admin struct {
	// AllowStdioVendors lets operator keys register stdio vendors through
	// the API: toolhub then runs the command they name on this host.
	// Default false: stdio vendors come from this file only.
	AllowStdioVendors bool `yaml:"allow_stdio_vendors"`
}

// Outbound bounds where vendor URLs may point (SSRF): private, loopback,
// link-local and metadata addresses are refused unless allowed here.
type Outbound struct {
	Allow []string `yaml:"allow"` // CIDRs, addresses, host:port pairs or host names
	Deny  []string `yaml:"deny"`  // always refused, even if public
	// LoopbackOnly keeps vendor traffic on this machine whatever allow
	// says (tests, drills, demos): a dial to any address but loopback is
	// refused and logged, and names resolve from the hosts file only
	// (netguard.Sandbox). Restart to change.
	LoopbackOnly bool `yaml:"loopback_only"`
}

// Privacy holds the redaction rules vendors opt into with `redact:`.
type Privacy struct {
	Rules map[string]string `yaml:"rules"` // name → regular expression; phone and national_id are built in
}

// DefaultRedactionRules are the built-in redaction rules.
var DefaultRedactionRules = map[string]string{
	"phone":       `\+?\d[\d\s().-]{7,}\d`,
	"national_id": `\b\d{6}(?:19|20)?\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]\b|\b\d{3}-\d{2}-\d{4}\b`,
}

// RedactionRules compiles the built-in and configured rules.
func (p Privacy) RedactionRules() (map[string]*regexp.Regexp, error) {
	out := map[string]*regexp.Regexp{}
	for _, src := range []map[string]string{DefaultRedactionRules, p.Rules} {
		for name, expr := range src {
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("privacy.rules.%s: %v", name, err)
			}
			out[name] = re
		}
	}
	return out, nil
}

// Governance tunes the breakers, ramps, retries, probes and timeout
// classes. Zero fields mean the defaults written next to them.
type Governance struct {
	Timeouts map[string]registry.Duration `yaml:"timeouts"` // tool classes: simple 5s, complex 30s, long 60s
	Breaker  struct {
		Window              registry.Duration `yaml:"window"`               // 10s
		MinCalls            int               `yaml:"min_calls"`            // 20
		FailureRatio        float64           `yaml:"failure_ratio"`        // 0.5
		ConsecutiveFailures int               `yaml:"consecutive_failures"` // 5
		CoolDown            registry.Duration `yaml:"cool_down"`            // 30s, doubling on repeated trips
		MaxCoolDown         registry.Duration `yaml:"max_cool_down"`        // 120s
		Trials              int               `yaml:"trials"`               // 3 half-open trial calls
	} `yaml:"breaker"`
	RampInterval registry.Duration `yaml:"ramp_interval"` // 30s per step of 5% → 25% → 50% → 100%
	RampFloor    registry.Duration `yaml:"ramp_floor"`    // 10ms: during a ramp, at least one call that often, whatever the share; negative: none
	EjectAfter   int               `yaml:"eject_after"`   // 3 failed probes in a row
	Retry        struct {
		Max  int               `yaml:"max"`  // 3 retries
		Base registry.Duration `yaml:"base"` // 1s, doubling, full jitter
		Cap  registry.Duration `yaml:"cap"`  // 30s
	} `yaml:"retry"`

	// Deadlines are a call's overall deadline per tool class when the
	// caller sets none (retries happen only inside it); default twice the
	// attempt timeout (simple 10s, complex 60s, long 120s; a vendor's own
	// timeout likewise), and a capability's is the sum of its chain's.
	Deadlines map[string]registry.Duration `yaml:"deadlines"`
}

// ClassTimeout returns the timeout of a tool class.
func (g *Governance) ClassTimeout(class string) time.Duration {
	if d, ok := g.Timeouts[class]; ok && d > 0 {
		return d.D()
	}
	return map[string]time.Duration{"simple": 5 * time.Second, "complex": 30 * time.Second, "long": 60 * time.Second}[class]
}

// Examples starts the example vendors inside toolhub, on their own port.
type Examples struct {
	Addr string `yaml:"addr"` // e.g. 127.0.0.1:9100; each vendor at /<id>/mcp
}

// Capability is a capability as written in YAML (schemas as YAML maps).
type Capability struct {
	Name         string               `yaml:"name"`
	Description  string               `yaml:"description"`
	InputSchema  map[string]any       `yaml:"input_schema"`
	OutputSchema map[string]any       `yaml:"output_schema"`
	Chain        []registry.ChainStep `yaml:"chain"`
	Keywords     []string             `yaml:"keywords"` // words for the offline planner, e.g. [天气, weather, forecast]
}

// Load reads a config file; path "" loads the embedded default.
func Load(path string) (*Config, error) {
	data := defaultYAML
	name := "embedded default config"
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %v", err)
		}
		data, name = b, path
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return c, nil
}

// ErrEmpty: the config sets no key. Such a file is refused, at start and
// on reload: an emptied or truncated file would otherwise drop every
// vendor and tenant, and with no tenants every caller sees every tool.
var ErrEmpty = errors.New("config is empty: it sets no key (to run on the embedded defaults, leave out --config)")

// Parse decodes and validates a config, filling defaults.
func Parse(data []byte) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if isEmpty(&doc) {
		return nil, ErrEmpty
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.Data == "" {
		c.Data = "./data"
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 4 << 20
	}
	if c.RedisPrefix == "" {
		c.RedisPrefix = "toolhub:"
	}
	if c.Schema == "" {
		c.Schema = "toolhub"
	}
	if c.Instances == 0 {
		c.Instances = 1
	}
	if c.Timeout == 0 {
		c.Timeout = registry.Duration(5e9)
	}
	return &c, c.Validate()
}

// Validate checks the whole config and reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if host, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: %v", c.Addr, err))
	} else if !c.Auth.Enabled && !IsLoopback(host) {
		errs = append(errs, fmt.Errorf("addr %q is not a loopback address and auth is off: every caller would be an operator; set auth.enabled: true (and issue keys with `toolhub keys create`) or listen on 127.0.0.1", c.Addr))
	}
	if h := c.HTTP; h.ReadHeaderTimeout < 0 || h.ReadTimeout < 0 || h.WriteTimeout < 0 || h.IdleTimeout < 0 {
		errs = append(errs, errors.New("http: read_header_timeout, read_timeout, write_timeout and idle_timeout must not be negative"))
	}
	for _, p := range c.Catalog.Always {
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, fmt.Errorf("catalog.always: %q: %v", p, err))
		}
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("max_body_bytes %d is below 1024", c.MaxBodyBytes))
	}
	for class, d := range c.Governance.Timeouts {
		if !slices.Contains(registry.ToolClasses, class) || d <= 0 {
			errs = append(errs, fmt.Errorf("governance.timeouts: %q: want a positive duration for one of %v", class, registry.ToolClasses))
		}
	}
	for class, d := range c.Governance.Deadlines {
		if !slices.Contains(registry.ToolClasses, class) || d <= 0 {
			errs = append(errs, fmt.Errorf("governance.deadlines: %q: want a positive duration for one of %v", class, registry.ToolClasses))
		}
	}
	if g := c.Governance; g.Breaker.FailureRatio < 0 || g.Breaker.FailureRatio > 1 {
		errs = append(errs, fmt.Errorf("governance.breaker.failure_ratio %v: want 0..1", g.Breaker.FailureRatio))
	}
	rules, err := c.Privacy.RedactionRules()
	if err != nil {
		errs = append(errs, err)
	}
	for _, v := range c.Vendors {
		for _, r := range v.Redact {
			if _, ok := rules[r]; !ok && err == nil {
				errs = append(errs, fmt.Errorf("vendor %q: redact: no rule %q (built in: phone, national_id; add more under privacy.rules)", v.ID, r))
			}
		}
	}
	if _, err := netguard.New(netguard.Options{Allow: c.Outbound.Allow, Deny: c.Outbound.Deny}); err != nil {
		errs = append(errs, fmt.Errorf("outbound: %v", err))
	}
	errs = append(errs, c.Cache.Validate(), c.Fallback.Validate(), c.Telemetry.Validate(), c.Auth.OAuth.Validate())
	if c.Auth.OAuth.Enabled() && !c.Auth.Enabled {
		errs = append(errs, errors.New("auth.oauth is set but auth.enabled is false: set auth.enabled: true for toolhub to check tokens"))
	}
	if _, err := billing.NewBudgets(c.Billing.Budgets, nil); err != nil {
		errs = append(errs, err)
	}
	if _, err := billing.ParseSyncPolicy(c.Meter.Sync); err != nil {
		errs = append(errs, err)
	}
	if m := c.MCP; m.MaxSessionsPerKey < 0 || m.MaxSessions < 0 || m.SessionIdleTimeout < 0 {
		errs = append(errs, errors.New("mcp: max_sessions_per_key, max_sessions and session_idle_timeout must not be negative (0 means the default)"))
	}
	if p := c.Planner; p.MaxGoalBytes < 0 || p.MaxGoalClauses < 0 || p.MaxAnswerBytes < 0 || p.MaxConcurrentPerTenant < 0 {
		errs = append(errs, errors.New("planner: max_goal_bytes, max_goal_clauses, max_answer_bytes and max_concurrent_per_tenant must not be negative (0 means the default)"))
	}
	if c.Jobs.Workers < 0 || c.Jobs.MaxAttempts < 0 || c.Jobs.ResultTTL < 0 || c.Jobs.Deadline < 0 {
		errs = append(errs, errors.New("jobs: workers, max_attempts, result_ttl and deadline must not be negative"))
	}
	errs = append(errs, c.Jobs.validateWebhooks())
	if c.Instances < 1 {
		errs = append(errs, fmt.Errorf("instances %d: want at least 1", c.Instances))
	}
	switch c.LogLevel {
	case "", "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log_level %q: want debug, info, warn or error", c.LogLevel))
	}
	errs = append(errs, c.validateCatalog()...)
	return errors.Join(errs...)
}

// validateCatalog checks the vendors, the capabilities' chains and the
// tenants: each valid, none declared twice, every chain on declared
// vendors.
func (c *Config) validateCatalog() []error {
	var errs []error
	seen := map[string]bool{}
	for i := range c.Vendors {
		v := &c.Vendors[i]
		if err := v.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("vendors[%d]: %w", i, err))
		}
		if seen[v.ID] {
			errs = append(errs, fmt.Errorf("vendors[%d]: vendor %q is declared twice", i, v.ID))
		}
		seen[v.ID] = true
	}
	caps, err := c.RegistryCapabilities()
	errs = append(errs, err)
	for _, cp := range caps {
		if err := cp.Compile(); err != nil {
			errs = append(errs, err)
		}
		for i, st := range cp.Chain {
			if v, _ := st.VendorTool(); !seen[v] {
				errs = append(errs, fmt.Errorf("capability %q: chain[%d]: vendor %q is not declared under vendors", cp.Name, i, v))
			}
		}
	}
	tseen := map[string]bool{}
	for i := range c.Tenants {
		if err := c.Tenants[i].Validate(); err != nil {
			errs = append(errs, fmt.Errorf("tenants[%d]: %w", i, err))
		}
		if tseen[c.Tenants[i].ID] {
			errs = append(errs, fmt.Errorf("tenants[%d]: tenant %q is declared twice", i, c.Tenants[i].ID))
		}
		tseen[c.Tenants[i].ID] = true
	}
	return errs
}

// isEmpty reports whether a YAML document holds no key: nothing, only
// comments, null or an empty mapping.
func isEmpty(doc *yaml.Node) bool {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	switch n.Kind {
	case 0, yaml.DocumentNode:
		return len(n.Content) == 0
	case yaml.MappingNode:
		return len(n.Content) == 0
	case yaml.ScalarNode:
		return n.Tag == "!!null"
	}
	return false
}

// RegistryCapabilities converts the YAML capabilities.
func (c *Config) RegistryCapabilities() ([]registry.Capability, error) {
	out := make([]registry.Capability, 0, len(c.Capabilities))
	var errs []error
	for _, yc := range c.Capabilities {
		rc := registry.Capability{Name: yc.Name, Description: yc.Description, Chain: yc.Chain, Keywords: yc.Keywords}
		var err error
		if yc.InputSchema != nil {
			if rc.InputSchema, err = json.Marshal(yc.InputSchema); err != nil {
				errs = append(errs, fmt.Errorf("capability %q: input_schema: %v", yc.Name, err))
			}
		}
		if yc.OutputSchema != nil {
			if rc.OutputSchema, err = json.Marshal(yc.OutputSchema); err != nil {
				errs = append(errs, fmt.Errorf("capability %q: output_schema: %v", yc.Name, err))
			}
		}
		out = append(out, rc)
	}
	return out, errors.Join(errs...)
}

// IsLoopback reports whether host is a loopback name or address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (j Jobs) validateWebhooks() error {
	var errs []error
	seen := map[string]bool{}
	for i, h := range j.Webhooks {
		if h.Tenant == "" {
			errs = append(errs, fmt.Errorf("jobs.webhooks[%d]: tenant is empty", i))
		}
		if seen[h.Tenant] {
			errs = append(errs, fmt.Errorf("jobs.webhooks[%d]: tenant %q has a webhook already (one per tenant)", i, h.Tenant))
		}
		seen[h.Tenant] = true
		if u, err := url.Parse(h.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("jobs.webhooks[%d]: url %q: want an absolute http or https URL", i, h.URL))
		}
		if h.Secret == "" {
			errs = append(errs, fmt.Errorf("jobs.webhooks[%d]: secret is empty (the HMAC key receivers verify with; ${VAR} reads it from the environment)", i))
		}
	}
	return errors.Join(errs...)
}
