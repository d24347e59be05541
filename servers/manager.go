package servers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/vendorconn"
	"github.com/toolhub/toolhub/internal/x/fanout"
	"github.com/toolhub/toolhub/registry"
)

// DefaultInheritEnv names the variables of toolhub's environment that a
// stdio vendor gets when Options.InheritEnv is nil: enough to find and run
// a program, nothing that could hold a secret.
var DefaultInheritEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT"}

// DefaultResyncInterval is the least time between two tool syncs of a
// vendor (Options.ResyncInterval): the bound on the list-change rate.
const DefaultResyncInterval = time.Second

// DefaultProtocolVersion is the MCP revision toolhub offers its vendors
// unless told otherwise (Options.ProtocolVersion): 2025-11-25, the newest
// revision with the initialize handshake, not 2026-07-28. Measured against
// mcp-go's conformance server on one machine (direct mcp-go client,
// tools/call of test_simple_text, three rounds of 3 s), 2026-07-28 made
// 0.52–0.79× the calls/s of 2025-11-25 at 16 clients and 0.50–0.78× at
// one, with a p50 of 510–666 µs against 403–458 µs; 2025-03-26,
// 2025-06-18 and 2025-11-25 were alike within the noise. The stateless
// revision makes every request carry its protocol version, client
// identity and capabilities in _meta, which both ends encode and decode
// again per call, plus header mirroring the server checks against the
// body. It also removed server-initiated requests, so a vendor that asks
// for sampling or elicitation mid-call can do so only on the older
// revisions. A vendor on 2025-11-25 keeps a session (Mcp-Session-Id),
// which the fast path reuses for every call.
const DefaultProtocolVersion = mcp.ProtocolVersion20251125

// Options configure a [Manager]. A nil *Options, and every zero field,
// means the default.
type Options struct {
	// Logger; nil means slog.Default(). Every record carries the vendor id.
	Logger *slog.Logger
	// LookupEnv resolves ${VAR} in a vendor's url, headers and env, and
	// supplies InheritEnv. Nil means no variables: a spec that refers to
	// one stays unavailable with an error naming it. (cmd/ passes
	// os.LookupEnv; packages never read the environment themselves.)
	// Expanded values are secrets: they never appear in status or logs.
	LookupEnv func(string) (string, bool)
	// InheritEnv names the variables a stdio vendor inherits, through
	// LookupEnv; nil means DefaultInheritEnv. A vendor gets nothing else of
	// toolhub's environment.
	InheritEnv []string
	// HTTPClient is the base for HTTP and SSE vendors: its Transport (nil
	// means a clone of http.DefaultTransport keeping more idle connections
	// per host), CheckRedirect and Jar are used. Its Timeout is not: calls
	// are bounded by their context, and SSE streams live long.
	HTTPClient *http.Client
	// RestartBackoff spaces reconnects and stdio restarts; zero fields mean
	// 500 ms and 30 s.
	RestartBackoff Backoff
	// ClientInfo is how toolhub introduces itself to vendors; zero means
	// {Name: "toolhub", Version: "dev"}.
	ClientInfo mcp.Implementation
	// ProtocolVersion is the MCP revision offered; "" means
	// DefaultProtocolVersion. A vendor that speaks only older revisions
	// negotiates down in the handshake.
	ProtocolVersion string
	// NoFastPath sends every tools/call through mcp-go's client; false
	// (the default) lets streamable HTTP vendors take the fast path
	// (fast.go). For comparisons and benchmarks.
	NoFastPath bool
	// MaxResponseBytes bounds one response from a vendor (an HTTP body, a
	// stdio line); zero means 16 MiB, negative means no bound.
	MaxResponseBytes int64
	// ConnectTimeout bounds starting, initializing and the health probe of
	// one connection; zero means 30 s.
	ConnectTimeout time.Duration
	// ToolSyncTimeout bounds one full tools/list; zero means 30 s.
	ToolSyncTimeout time.Duration
	// ResyncInterval debounces tool syncs: a vendor's tools are listed
	// again at most once per interval, however often it sends
	// notifications/tools/list_changed (a change announced meanwhile is
	// listed when the interval ends); zero means DefaultResyncInterval.
	ResyncInterval time.Duration
	// HealthInterval is how often a ready connection is probed (ping, or
	// server/discover on 2026-07-28); zero means 15 s, negative means
	// never. Three connection failures in a row — probes or calls — make
	// the manager reconnect.
	HealthInterval time.Duration
	// DrainTimeout bounds how long a replaced or removed connection waits
	// for its in-flight calls before it closes; zero means 30 s.
	DrainTimeout time.Duration
	// ConnectWait is how long a call (or a probe) to a vendor whose
	// connection is being made waits for it, rather than failing at once:
	// a vendor's tools are in the catalog from its tool list on, a moment
	// before its connection takes calls. Zero means 2 s; negative, no wait.
	ConnectWait time.Duration
	// OnChange, if set, is called with a vendor's status after each change.
	// It runs on the vendor's supervisor and must not block.
	OnChange func(VendorStatus)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.InheritEnv == nil {
		c.InheritEnv = DefaultInheritEnv
	}
	c.RestartBackoff = c.RestartBackoff.WithDefaults()
	if c.ProtocolVersion == "" {
		c.ProtocolVersion = DefaultProtocolVersion
	}
	if c.ClientInfo.Name == "" {
		c.ClientInfo = mcp.Implementation{Name: "toolhub", Version: "dev"}
	}
	switch {
	case c.MaxResponseBytes == 0:
		c.MaxResponseBytes = 16 << 20
	case c.MaxResponseBytes < 0:
		c.MaxResponseBytes = 0
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 30 * time.Second
	}
	if c.ToolSyncTimeout <= 0 {
		c.ToolSyncTimeout = 30 * time.Second
	}
	if c.ResyncInterval <= 0 {
		c.ResyncInterval = DefaultResyncInterval
	}
	if c.HealthInterval == 0 {
		c.HealthInterval = 15 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.ConnectWait == 0 {
		c.ConnectWait = 2 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Manager keeps one long-lived connection to each MCP vendor, supervises
// it, keeps the vendor's tools in the catalog, and hands the gateway an
// invoker per vendor. It implements [hub.Upstreams]. It is safe for
// concurrent use.
type Manager struct {
	cat        *registry.Catalog
	opts       Options
	httpClient *http.Client
	ownHTTP    *http.Transport // closed with the manager, when it is ours
	baseHTTP   *http.Transport // the base RoundTripper, when it is an *http.Transport

	life *vendorconn.Lifecycle[*vendor, VendorStatus]
	set  *vendorconn.Set[*vendor] // life's

	events fanout.List[Event] // OnEvent subscribers
}

var _ hub.Upstreams = (*Manager)(nil)

// NewManager returns a manager that registers vendors' tools in cat.
func NewManager(cat *registry.Catalog, opts *Options) *Manager {
	m := &Manager{cat: cat, opts: opts.withDefaults()}
	m.life = vendorconn.NewLifecycle(cat, vendorconn.Errors{Closed: ErrClosed, Duplicate: ErrDuplicateVendor, Unknown: ErrUnknownVendor},
		protocol{m}, &vendorconn.LifecycleOptions{Logger: m.opts.Logger})
	m.set = m.life.Set()
	var base http.RoundTripper
	base, m.ownHTTP = vendorconn.BaseTransport(m.opts.HTTPClient)
	m.baseHTTP, _ = base.(*http.Transport)
	m.httpClient = vendorconn.Client(m.opts.HTTPClient, &recordingTransport{base: base, now: m.opts.Now})
	return m
}

// Upstream returns the invoker of a vendor the manager holds. The invoker
// fails fast with unavailable while the vendor is not ready.
func (m *Manager) Upstream(id string) (hub.Invoker, bool) {
	return vendorconn.Upstream(m.set, id)
}

// Ping checks that a vendor's connection answers (MCP ping, or
// server/discover on the stateless protocol revision). Health probes that
// have no business-level tool call use it.
func (m *Manager) Ping(ctx context.Context, id string) error {
	v, ok := m.set.Get(id)
	if !ok {
		return &hub.Error{Code: hub.CodeUnavailable, Vendor: id, Message: fmt.Sprintf("vendor %q is not managed", id)}
	}
	conn := v.ready(ctx)
	if conn == nil {
		return v.notReady()
	}
	return conn.probe(ctx)
}

// Add starts managing an MCP vendor. It returns at once: the connection is
// made in the background (see [Manager.Status]). It fails for an invalid
// spec, a vendor that is not MCP, or an id already held. ctx is not used
// beyond the call.
func (m *Manager) Add(ctx context.Context, spec registry.Vendor) error {
	return m.life.Add(ctx, spec)
}

// Update applies a changed spec to a vendor the manager holds. A change
// to how it is reached (the mcp section, or Disabled) replaces its
// connection: the new one is dialled in the background while the old one
// takes no new calls and closes when its in-flight calls are done (at most
// Options.DrainTimeout). Update waits for that until ctx is done. Any
// other change (name, timeout, limits) is taken without reconnecting. An
// unchanged spec changes nothing.
func (m *Manager) Update(ctx context.Context, spec registry.Vendor) error {
	return m.life.Update(ctx, spec)
}

// Remove stops managing a vendor and removes its tools from the catalog.
// Its connection takes no new calls and closes when the calls in flight
// are done (at most Options.DrainTimeout); Remove waits for that until ctx
// is done.
func (m *Manager) Remove(ctx context.Context, id string) error {
	return m.life.Remove(ctx, id)
}

// Sync makes the managed set equal to the MCP vendors in specs (A2A
// vendors are skipped): it adds new ones, updates changed ones and removes
// those gone. Vendors whose spec is unchanged, and the calls in flight on
// them, are not touched. It is what a configuration reload calls. Every
// spec is applied that can be; the errors of the others are joined.
func (m *Manager) Sync(ctx context.Context, specs []registry.Vendor) error {
	return m.life.Sync(ctx, specs)
}

// Status returns a vendor's status; State is "" for an id the manager does
// not hold.
func (m *Manager) Status(id string) VendorStatus {
	return m.life.Status(id)
}

// Statuses returns the status of every vendor, sorted by id.
func (m *Manager) Statuses() []VendorStatus {
	return m.life.Statuses()
}

// Close stops every vendor at once (stdio vendors get their stdin closed,
// then are killed after a grace period) and waits for them. Calls in
// flight fail. The catalog is left as it is. Close is idempotent.
func (m *Manager) Close() error {
	if m.life.Close() && m.ownHTTP != nil {
		m.ownHTTP.CloseIdleConnections()
	}
	return nil
}

// setTools writes a vendor's tools to the catalog, unless the vendor has
// been replaced or removed meanwhile.
func (m *Manager) setTools(v *vendor, defs []registry.ToolDef) ([]error, bool) {
	return m.set.SetTools(v.id, v, func() bool { return v.ctx.Err() == nil }, defs)
}

// protocol plugs MCP vendors into the manager's vendorconn.Lifecycle.
type protocol struct{ m *Manager }

var _ vendorconn.Protocol[*vendor, VendorStatus] = protocol{}

func (protocol) Accepts(spec registry.Vendor) bool {
	return spec.Kind() == registry.KindMCP && spec.MCP != nil
}

func (protocol) Check(spec registry.Vendor) error { return checkSpec(spec) }

func (p protocol) New(spec registry.Vendor) *vendor { return newVendor(p.m, spec) }

// Change keeps old, and the calls on it, when nothing about the connection
// changed (the mcp section, Disabled), taking the new name, timeout and
// limits; else it returns the vendor that replaces old, which listens on
// the legacy GET stream from the start if old had to.
func (p protocol) Change(old *vendor, spec registry.Vendor) (*vendor, bool) {
	if sameConnection(old.spec, spec) {
		old.mu.Lock()
		old.spec.Name, old.spec.Timeout, old.spec.Limits = spec.Name, spec.Timeout, spec.Limits
		old.mu.Unlock()
		return nil, false
	}
	v := newVendor(p.m, spec)
	v.legacyListen.Store(old.legacyListen.Load() && sameMCP(old.spec.MCP, spec.MCP))
	return v, true
}

func (protocol) Unknown(id string) VendorStatus { return VendorStatus{ID: id} }

func checkSpec(spec registry.Vendor) error {
	if spec.MCP == nil || spec.Kind() != registry.KindMCP {
		return fmt.Errorf("%w: %q", ErrNotMCP, spec.ID)
	}
	return spec.Validate()
}

// sameConnection reports whether two specs reach the vendor the same way.
func sameConnection(a, b registry.Vendor) bool {
	return a.Disabled == b.Disabled && sameMCP(a.MCP, b.MCP)
}

func sameMCP(a, b *registry.MCPSpec) bool { return vendorconn.SameJSON(a, b) }

// vendorClient is the HTTP client of one connection to an HTTP or SSE
// vendor: the manager's client on a pool of its own — a clone of the base
// transport (same dialer, so the same outbound policy), keeping as many
// idle connections as the vendor may have calls in flight (limit, its
// concurrency limit) when that is above the base's, so that every call in
// flight finds a kept-alive connection — with the vendor's headers set on
// every request that lacks them (mcp-go's transport leaves them off some,
// such as the DELETE that ends a session). The returned func closes the
// pool's idle connections: a connection that is re-dialled (after an
// outbound policy change, say) dials anew, and is checked anew. Without a
// base *http.Transport to clone, the pool is the manager's.
func (m *Manager) vendorClient(headers map[string]string, limit int) (hc *http.Client, release func(), base *http.Transport) {
	c := *m.httpClient
	hc, release = &c, m.httpClient.CloseIdleConnections
	if b := m.baseHTTP; b != nil {
		base = b.Clone()
		base.MaxIdleConnsPerHost = max(limit, b.MaxIdleConnsPerHost)
		hc.Transport = &recordingTransport{base: base, now: m.opts.Now}
		release = base.CloseIdleConnections
	}
	if len(headers) > 0 {
		h := make(http.Header, len(headers))
		for k, v := range headers {
			h.Set(k, v)
		}
		hc.Transport = &headerTransport{base: hc.Transport, h: h}
	}
	return hc, release, base
}

// headerTransport sets a vendor's headers on requests that lack them.
type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

// CloseIdleConnections closes the base's idle connections.
func (t *headerTransport) CloseIdleConnections() { closeIdle(t.base) }

func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for k, v := range t.h {
		if got := req.Header[k]; len(got) != 1 || got[0] != v[0] {
			req = req.Clone(req.Context()) // a RoundTripper must not modify its request
			for k, v := range t.h {
				req.Header[k] = v
			}
			break
		}
	}
	return t.base.RoundTrip(req)
}
