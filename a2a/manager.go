package a2a

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/vendorconn"
	"github.com/toolhub/toolhub/registry"
)

// States of a vendor.
const (
	StateConnecting  = "connecting"  // the card has not been fetched yet
	StateReady       = "ready"       // the card is fetched; calls go through
	StateUnavailable = "unavailable" // the card could not be fetched or used; retrying
	StateDisabled    = "disabled"    // the spec says disabled
)

// VendorStatus is what the manager knows about one A2A vendor.
type VendorStatus struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"` // always "a2a"
	State     string    `json:"state"`
	Card      string    `json:"card"`                // the card URL
	Agent     string    `json:"agent,omitempty"`     // the card's name
	Version   string    `json:"version,omitempty"`   // the card's version
	Protocol  string    `json:"protocol,omitempty"`  // protocol version of the interface used ("1.0", "0.3")
	Endpoint  string    `json:"endpoint,omitempty"`  // the interface URL used
	Streaming bool      `json:"streaming,omitempty"` // calls stream (the card says it can)
	Tools     int       `json:"tools"`
	Rejected  []string  `json:"rejected,omitempty"` // skills left out of the catalog, with why
	LastError string    `json:"last_error,omitempty"`
	Fetched   time.Time `json:"fetched,omitzero"` // last good card fetch
	Since     time.Time `json:"since,omitzero"`   // when State last changed
}

// Options configure a [Manager]. A nil *Options, and every zero field,
// means the default.
type Options struct {
	// Logger; nil means slog.Default(). Every record carries the vendor id.
	Logger *slog.Logger
	// HTTPClient is the base for card fetches and calls: its Transport (nil
	// means a clone of http.DefaultTransport), CheckRedirect and Jar are
	// used. Its Timeout is not: calls are bounded by their context, and
	// streams live long.
	HTTPClient *http.Client
	// RefreshInterval is how often a ready vendor's card is fetched again
	// (new or changed skills replace the vendor's tools); zero means 5
	// minutes, negative never.
	RefreshInterval time.Duration
	// RetryMin and RetryMax space fetches of a card that failed: the wait
	// doubles from RetryMin to RetryMax, jittered; zero means 500 ms and
	// 30 s.
	RetryMin, RetryMax time.Duration
	// CardTimeout bounds one card fetch; zero means 10 s.
	CardTimeout time.Duration
	// PollInterval is the longest wait between GetTask polls of an agent
	// that does not stream (the first poll comes after 20 ms, doubling);
	// zero means 1 s.
	PollInterval time.Duration
	// CancelTimeout bounds the CancelTask sent when a call's context ends
	// while its task runs; zero means 5 s.
	CancelTimeout time.Duration
	// LookupEnv resolves ${VAR} in a vendor's a2a.headers (the app passes
	// os.LookupEnv; packages never read the environment themselves); nil
	// knows no variables. Expanded values are secrets: they never appear in
	// status, errors or logs.
	LookupEnv func(string) (string, bool)
	// OnChange, if set, is called with a vendor's status after each change.
	// It must not block.
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
	if c.RefreshInterval == 0 {
		c.RefreshInterval = 5 * time.Minute
	}
	if c.RetryMin <= 0 {
		c.RetryMin = 500 * time.Millisecond
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 30 * time.Second
	}
	if c.CardTimeout <= 0 {
		c.CardTimeout = 10 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.CancelTimeout <= 0 {
		c.CancelTimeout = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Manager holds toolhub's A2A vendors: for each it fetches and validates
// the agent card, keeps the card's skills in the catalog as tools
// ("vendor__skill"), refreshes the card, and hands the gateway an invoker
// that runs a skill as an A2A task. It implements [hub.Upstreams]. It is
// safe for concurrent use.
type Manager struct {
	cat      *registry.Catalog
	opts     Options
	cardHTTP *http.Client // plain: card fetches read the status themselves
	callHTTP *http.Client // non-2xx becomes *StatusError
	base     http.RoundTripper
	ownHTTP  *http.Transport

	life *vendorconn.Lifecycle[*vendor, VendorStatus]
	set  *vendorconn.Set[*vendor] // life's
}

var _ hub.Upstreams = (*Manager)(nil)

// NewManager returns a manager that registers vendors' skills in cat.
func NewManager(cat *registry.Catalog, opts *Options) *Manager {
	m := &Manager{cat: cat, opts: opts.withDefaults()}
	m.life = vendorconn.NewLifecycle(cat, vendorconn.Errors{Closed: ErrClosed, Duplicate: ErrDuplicateVendor, Unknown: ErrUnknownVendor},
		protocol{m}, &vendorconn.LifecycleOptions{Logger: m.opts.Logger, Noun: "a2a vendor"})
	m.set = m.life.Set()
	m.base, m.ownHTTP = vendorconn.BaseTransport(m.opts.HTTPClient)
	m.cardHTTP = vendorconn.Client(m.opts.HTTPClient, m.base)
	m.callHTTP = vendorconn.Client(m.opts.HTTPClient, &statusTransport{base: m.base, now: m.opts.Now})
	return m
}

// Upstream returns the invoker of a vendor the manager holds. The invoker
// fails fast with unavailable while the vendor has no usable card.
func (m *Manager) Upstream(id string) (hub.Invoker, bool) {
	return vendorconn.Upstream(m.set, id)
}

// Add starts managing an A2A vendor. It returns at once: the card is
// fetched in the background (see [Manager.Status], or call
// [Manager.Refresh] to wait for it). It fails for an invalid spec, a
// vendor that is not A2A, or an id already held.
func (m *Manager) Add(ctx context.Context, spec registry.Vendor) error {
	return m.life.Add(ctx, spec)
}

// Update applies a changed spec to a vendor the manager holds. A new card
// URL, or a change of Disabled, starts the vendor afresh (calls in flight
// finish on the old client); any other change is taken as it is. An
// unchanged spec changes nothing.
func (m *Manager) Update(ctx context.Context, spec registry.Vendor) error {
	return m.life.Update(ctx, spec)
}

// Remove stops managing a vendor and removes its tools from the catalog.
func (m *Manager) Remove(ctx context.Context, id string) error {
	return m.life.Remove(ctx, id)
}

// Sync makes the managed set equal to the A2A vendors in specs (MCP
// vendors are skipped): it adds new ones, updates changed ones and removes
// those gone. It is what a configuration reload calls, next to
// servers.Manager.Sync. Every spec is applied that can be; the errors of
// the others are joined.
func (m *Manager) Sync(ctx context.Context, specs []registry.Vendor) error {
	return m.life.Sync(ctx, specs)
}

// Refresh fetches a vendor's card now and applies it, and returns what
// went wrong, if anything (a *CardError for a bad card). The admin API
// can call it to register a vendor with a clear error at once.
func (m *Manager) Refresh(ctx context.Context, id string) error {
	v, ok := m.set.Get(id)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownVendor, id)
	}
	return v.refresh(ctx)
}

// Ping checks that a vendor's agent answers: it fetches the card (without
// applying it). It is the default health probe of an A2A vendor. The error
// is a *hub.Error: unavailable for a vendor not held, not ready, or not
// reachable (or answering 5xx); rate_limited for 429; upstream_error for a
// card that no longer parses.
func (m *Manager) Ping(ctx context.Context, id string) error {
	v, ok := m.set.Get(id)
	if !ok {
		return &hub.Error{Code: hub.CodeUnavailable, Vendor: id, Message: fmt.Sprintf("vendor %q is not managed", id)}
	}
	st := v.Status()
	if st.State != StateReady {
		// Its card not fetched yet is the hub's own state, not a failed probe.
		return &hub.Error{Code: hub.CodeUnavailable, Vendor: id, HubState: st.State == StateConnecting && st.LastError == "",
			Message: fmt.Sprintf("vendor %q is %s: %s", id, st.State, orText(st.LastError, "no card yet"))}
	}
	_, err := FetchCard(ctx, v.cardHTTP, st.Card)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	he := &hub.Error{Code: hub.CodeUpstream, Vendor: id, Message: v.hdr.redact(fmt.Sprintf("vendor %q: %v", id, err)), Err: err}
	var ce *CardError
	if errors.As(err, &ce) {
		switch {
		case ce.Status == http.StatusTooManyRequests:
			he.Code = hub.CodeRateLimited
		case ce.Status >= 500, ce.Status == 0 && strings.Contains(ce.Error(), "not reachable"):
			he.Code = hub.CodeUnavailable
		}
	}
	return he
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

// Close stops every vendor's refresh loop and waits for background work
// (task cancellations) to end. The catalog is left as it is. Close is
// idempotent.
func (m *Manager) Close() error {
	if m.life.Close() && m.ownHTTP != nil {
		m.ownHTTP.CloseIdleConnections()
	}
	return nil
}

// setTools writes a vendor's tools to the catalog unless the vendor has
// been replaced or removed meanwhile.
func (m *Manager) setTools(v *vendor, defs []registry.ToolDef) ([]error, bool) {
	return m.set.SetTools(v.id, v, func() bool { return v.ctx.Err() == nil }, defs)
}

// protocol plugs A2A vendors into the manager's vendorconn.Lifecycle.
type protocol struct{ m *Manager }

var _ vendorconn.Protocol[*vendor, VendorStatus] = protocol{}

func (protocol) Accepts(spec registry.Vendor) bool { return spec.Kind() == registry.KindA2A }

func (protocol) Check(spec registry.Vendor) error { return checkSpec(spec) }

func (p protocol) New(spec registry.Vendor) *vendor { return newVendor(p.m, spec) }

// Change keeps old, taking spec as it is, unless the card URL (or
// anything else of the a2a section) or Disabled changed.
func (p protocol) Change(old *vendor, spec registry.Vendor) (*vendor, bool) {
	cur := old.Spec()
	if vendorconn.SameJSON(cur.A2A, spec.A2A) && cur.Disabled == spec.Disabled {
		old.mu.Lock()
		old.spec = spec
		old.mu.Unlock()
		return nil, false
	}
	return newVendor(p.m, spec), true
}

func (protocol) Unknown(id string) VendorStatus { return VendorStatus{ID: id} }

func checkSpec(spec registry.Vendor) error {
	if spec.A2A == nil || spec.Kind() != registry.KindA2A {
		return fmt.Errorf("%w: %q", ErrNotA2A, spec.ID)
	}
	return spec.Validate()
}
