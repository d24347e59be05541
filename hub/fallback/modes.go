package fallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
)

// Mode is a capability's degradation mode.
type Mode string

// The modes, in the order a failing primary walks them:
// Normal → Alert → Degraded → Recovering → Normal.
const (
	// Normal: the chain runs as configured.
	Normal Mode = "normal"
	// Alert: the primary looks unhealthy; a share of calls
	// ([Thresholds].AlertShare) already tries the secondary first.
	Alert Mode = "alert"
	// Degraded: the chain skips the primary (high-risk capabilities park
	// their calls instead of using a weaker vendor).
	Degraded Mode = "degraded"
	// Recovering: a share of calls ([Thresholds].RecoverShare) tries the
	// primary again.
	Recovering Mode = "recovering"
	// Off: switched off by an operator; every call fails as unavailable.
	Off Mode = "off"
)

// Value is the mode's value in the toolhub_capability_mode gauge.
func (m Mode) Value() float64 {
	switch m {
	case Alert:
		return 1
	case Degraded:
		return 2
	case Recovering:
		return 3
	case Off:
		return 4
	}
	return 0
}

func (m Mode) valid() bool {
	switch m {
	case Normal, Alert, Degraded, Recovering, Off:
		return true
	}
	return false
}

// Outcome is one attempt at a capability's primary vendor tool.
type Outcome struct {
	Failed   bool          // a vendor fault, timeout or open breaker
	Timeout  bool          // a timeout (also Failed)
	Latency  time.Duration // time in the attempt
	FastFail bool          // refused without calling the vendor (open breaker): its latency is not counted
}

// Change is a mode change, for logs.
type Change struct {
	Capability string
	From, To   Mode
	Reason     string
	At         time.Time
}

// ErrCore is returned when an operator tries to switch off a core capability.
var ErrCore = errors.New("fallback: a core capability cannot be switched off")

// ModesOptions configure [NewModes]. A nil *ModesOptions, and every zero
// field, means the default.
type ModesOptions struct {
	// Config gives the thresholds and the core flag per capability.
	Config Config
	// Capabilities lists the names Status reports besides those seen or
	// configured (internal/app passes the catalog's capabilities); nil means none.
	Capabilities func() []string
	// OnChange is called on every mode change, outside the lock.
	OnChange func(Change)
	// Registerer receives the toolhub_capability_mode gauge; nil means it
	// is not registered (see [Modes.Collector]).
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Modes tracks the degradation mode of every capability and the
// operator's overrides (pins, switches). Safe for concurrent use.
type Modes struct {
	mu       sync.Mutex
	cfg      Config
	caps     map[string]*capState
	names    func() []string
	onChange func(Change)
	now      func() time.Time
	gauge    *prometheus.GaugeVec
}

type capState struct {
	th       Thresholds
	measured Mode
	since    time.Time // when measured was entered
	pin      Mode      // "" when not pinned
	off      bool
	win      window

	badSince, severeSince, goodSince time.Time // zero when not currently true
}

// NewModes returns a tracker with every capability Normal.
func NewModes(opts *ModesOptions) *Modes {
	m := &Modes{caps: map[string]*capState{}, now: time.Now, gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "toolhub_capability_mode",
		Help: "Degradation mode of a capability: 0 normal, 1 alert, 2 degraded, 3 recovering, 4 off.",
	}, []string{"capability"})}
	if opts != nil {
		m.cfg = opts.Config
		m.names = opts.Capabilities
		m.onChange = opts.OnChange
		if opts.Now != nil {
			m.now = opts.Now
		}
		if opts.Registerer != nil {
			opts.Registerer.MustRegister(m.gauge)
		}
	}
	return m
}

// Collector is the toolhub_capability_mode gauge, for a registry.
func (m *Modes) Collector() prometheus.Collector { return m.gauge }

// SetConfig replaces thresholds and flags (a config reload); measured
// modes, pins and switches stay.
func (m *Modes) SetConfig(cfg Config) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg = cfg
	for name, s := range m.caps {
		s.th = m.thresholdsLocked(name)
	}
}

func (m *Modes) thresholdsLocked(name string) Thresholds {
	return m.cfg.Capabilities[name].Degradation.or(m.cfg.Degradation.or(DefaultThresholds))
}

// Thresholds returns the effective thresholds of a capability.
func (m *Modes) Thresholds(name string) Thresholds {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stateLocked(name).th
}

func (m *Modes) stateLocked(name string) *capState {
	s, ok := m.caps[name]
	if !ok {
		s = &capState{th: m.thresholdsLocked(name), measured: Normal, since: m.now()}
		m.caps[name] = s
		m.gauge.WithLabelValues(name).Set(Normal.Value())
	}
	return s
}

func (s *capState) effective() Mode {
	switch {
	case s.off:
		return Off
	case s.pin != "":
		return s.pin
	}
	return s.measured
}

// Mode returns the capability's effective mode now (operator switch, then
// pin, then measured).
func (m *Modes) Mode(name string) Mode {
	m.mu.Lock()
	s := m.stateLocked(name)
	changes := m.evaluateLocked(name, s)
	mode := s.effective()
	m.mu.Unlock()
	m.notify(changes)
	return mode
}

// Record notes one attempt at the capability's primary and re-evaluates
// its mode.
func (m *Modes) Record(name string, o Outcome) {
	m.mu.Lock()
	s := m.stateLocked(name)
	s.win.add(m.now(), s.th.Window.D(), o)
	changes := m.evaluateLocked(name, s)
	m.mu.Unlock()
	m.notify(changes)
}

func (m *Modes) notify(changes []Change) {
	if m.onChange == nil {
		return
	}
	for _, c := range changes {
		m.onChange(c)
	}
}

// evaluateLocked applies the measured transitions that are due, in turn.
func (m *Modes) evaluateLocked(name string, s *capState) []Change {
	now := m.now()
	th := s.th
	st := s.win.stats(now, th.Window.D())
	if st.n < th.MinSamples {
		s.badSince, s.severeSince, s.goodSince = time.Time{}, time.Time{}, time.Time{} // no evidence: nothing held
	} else {
		severe := st.errorRate() >= th.DegradeErrorRate || st.timeoutShare() >= th.DegradeTimeoutShare ||
			(th.DegradeLatency > 0 && st.timedN > 0 && st.meanLatency() >= th.DegradeLatency.D())
		bad := severe || st.errorRate() >= th.AlertErrorRate || st.timeoutShare() >= th.AlertTimeoutShare ||
			(th.AlertLatency > 0 && st.timedN > 0 && st.meanLatency() >= th.AlertLatency.D())
		track := func(t *time.Time, on bool) {
			switch {
			case !on:
				*t = time.Time{}
			case t.IsZero():
				*t = now
			}
		}
		track(&s.severeSince, severe)
		track(&s.badSince, bad)
		track(&s.goodSince, !bad)
	}
	held := func(since time.Time, d time.Duration) bool { return !since.IsZero() && now.Sub(since) >= d }
	var changes []Change
	to := func(next Mode, why string) {
		before := s.effective()
		changes = append(changes, Change{Capability: name, From: s.measured, To: next, Reason: why, At: now})
		s.measured, s.since = next, now
		if e := s.effective(); e != before {
			m.gauge.WithLabelValues(name).Set(e.Value())
		}
	}
	for range 4 {
		switch s.measured {
		case Normal:
			if held(s.badSince, th.AlertHold.D()) {
				to(Alert, fmt.Sprintf("primary unhealthy for %v (%s)", th.AlertHold.D(), st))
				continue
			}
		case Alert:
			if held(s.severeSince, th.DegradeHold.D()) {
				to(Degraded, fmt.Sprintf("primary failing for %v (%s)", th.DegradeHold.D(), st))
				continue
			}
			if held(s.goodSince, th.RecoverHold.D()) {
				to(Normal, fmt.Sprintf("primary healthy for %v (%s)", th.RecoverHold.D(), st))
				continue
			}
		case Degraded:
			if now.Sub(s.since) >= th.ProbeAfter.D() {
				s.win = window{}
				s.badSince, s.severeSince, s.goodSince = time.Time{}, time.Time{}, time.Time{}
				to(Recovering, fmt.Sprintf("degraded for %v: probing the primary with %.0f%% of calls", th.ProbeAfter.D(), th.RecoverShare*100))
				continue
			}
		case Recovering:
			if !s.badSince.IsZero() {
				to(Degraded, fmt.Sprintf("primary still unhealthy while recovering (%s)", st))
				continue
			}
			if held(s.goodSince, th.RecoverHold.D()) {
				to(Normal, fmt.Sprintf("primary healthy for %v (%s)", th.RecoverHold.D(), st))
				continue
			}
		}
		break
	}
	return changes
}

// Pin fixes a capability's mode until [Modes.Unpin], whatever the
// measurements say; pinning Off is [Modes.SwitchOff].
func (m *Modes) Pin(name string, mode Mode) error {
	if mode == Off {
		return m.SwitchOff(name)
	}
	if !mode.valid() {
		return fmt.Errorf("fallback: unknown mode %q; want normal, alert, degraded, recovering or off", mode)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stateLocked(name)
	s.pin = mode
	m.gauge.WithLabelValues(name).Set(s.effective().Value())
	return nil
}

// Unpin returns a capability to its measured mode.
func (m *Modes) Unpin(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stateLocked(name)
	s.pin = ""
	m.gauge.WithLabelValues(name).Set(s.effective().Value())
}

// SwitchOff makes every call of a non-core capability fail as unavailable
// ("switched off by operator") until [Modes.SwitchOn].
func (m *Modes) SwitchOff(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cfg.Capabilities[name].Core {
		return fmt.Errorf("%w: %q is core; pin it to a mode instead", ErrCore, name)
	}
	s := m.stateLocked(name)
	s.off = true
	m.gauge.WithLabelValues(name).Set(Off.Value())
	return nil
}

// SwitchOn undoes [Modes.SwitchOff].
func (m *Modes) SwitchOn(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stateLocked(name)
	s.off = false
	m.gauge.WithLabelValues(name).Set(s.effective().Value())
}

// Gate is a Call-tier middleware that refuses the calls of a switched-off
// capability before anything else answers them (install it before the
// cache middleware, so a cached answer does not outlive the switch). The
// router refuses them too; Gate only moves the refusal up front.
func (m *Modes) Gate() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			if c.Capability != nil && m.Mode(c.Capability.Name) == Off {
				return nil, switchedOff(c.Capability.Name)
			}
			return next.Invoke(ctx, c)
		})
	}
}

func switchedOff(name string) *hub.Error {
	return &hub.Error{Code: hub.CodeUnavailable, Message: fmt.Sprintf("capability %q is switched off by operator; use another capability or ask the operator to switch it on", name)}
}

// Status is one capability's row of GET /v1/capabilities.
type Status struct {
	Capability string    `json:"capability"`
	Mode       Mode      `json:"mode"`     // effective
	Measured   Mode      `json:"measured"` // what the measurements say
	Pinned     Mode      `json:"pinned,omitempty"`
	Off        bool      `json:"off,omitempty"`
	Core       bool      `json:"core,omitempty"`
	HighRisk   bool      `json:"high_risk,omitempty"`
	Policy     Policy    `json:"policy"`
	Since      time.Time `json:"since"` // when the measured mode was entered
	Window     Window    `json:"window"`
}

// Window is the primary's health over the sliding window.
type Window struct {
	Seconds       float64 `json:"seconds"`
	Samples       int     `json:"samples"`
	ErrorRate     float64 `json:"error_rate"`
	TimeoutShare  float64 `json:"timeout_share"`
	MeanLatencyMS float64 `json:"mean_latency_ms"`
}

// Status returns every known capability's mode, sorted by name.
func (m *Modes) Status() []Status {
	var extra []string
	if m.names != nil {
		extra = m.names()
	}
	m.mu.Lock()
	for name := range m.cfg.Capabilities {
		m.stateLocked(name)
	}
	for _, name := range extra {
		m.stateLocked(name)
	}
	var out []Status
	var changes []Change
	for name, s := range m.caps {
		changes = append(changes, m.evaluateLocked(name, s)...)
		st := s.win.stats(m.now(), s.th.Window.D())
		cc := m.cfg.Capabilities[name]
		pol := cc.Policy
		if pol == "" {
			pol = Ordered
		}
		out = append(out, Status{
			Capability: name, Mode: s.effective(), Measured: s.measured, Pinned: s.pin, Off: s.off,
			Core: cc.Core, HighRisk: cc.HighRisk, Policy: pol, Since: s.since,
			Window: Window{Seconds: s.th.Window.D().Seconds(), Samples: st.n, ErrorRate: st.errorRate(), TimeoutShare: st.timeoutShare(), MeanLatencyMS: float64(st.meanLatency().Microseconds()) / 1000},
		})
	}
	m.mu.Unlock()
	m.notify(changes)
	slices.SortFunc(out, func(a, b Status) int {
		switch {
		case a.Capability < b.Capability:
			return -1
		case a.Capability > b.Capability:
			return 1
		}
		return 0
	})
	return out
}

// Handler serves GET /v1/capabilities: {"capabilities": [Status…]}.
func (m *Modes) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"capabilities": m.Status()})
	})
}

// AdminHandler serves POST {name} with body {"mode": "degraded"} (pin),
// {"mode": "off"} (switch off), {"mode": ""} (unpin and switch on); the
// lead mounts it at POST /v1/admin/capabilities/{name}/mode behind admin
// auth and audit. It answers the capability's new Status.
func (m *Modes) AdminHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		var body struct {
			Mode Mode `json:"mode"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<12)).Decode(&body); err != nil || name == "" {
			httperr.Write(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: `want {"mode": "normal|alert|degraded|recovering|off|"} and a capability name`}, "")
			return
		}
		var err error
		switch body.Mode {
		case "":
			m.Unpin(name)
			m.SwitchOn(name)
		default:
			err = m.Pin(name, body.Mode)
		}
		if err != nil {
			code := hub.CodeInvalidRequest // an unknown mode
			if errors.Is(err, ErrCore) {
				code = hub.CodeConflict // a core capability cannot be switched off
			}
			httperr.Write(w, r, &hub.Error{Code: code, Message: err.Error(), Err: err}, "")
			return
		}
		for _, s := range m.Status() {
			if s.Capability == name {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(s)
				return
			}
		}
	})
}

// window is a sliding window of 10 buckets.
type window struct {
	b [10]bucket
}

type bucket struct {
	epoch               int64 // bucket number since the Unix epoch
	n, failed, timeouts int
	timedN              int // attempts with a measured latency
	latency             time.Duration
}

type stats struct {
	n, failed, timeouts, timedN int
	latency                     time.Duration
}

func (s stats) errorRate() float64 {
	if s.n == 0 {
		return 0
	}
	return float64(s.failed) / float64(s.n)
}

func (s stats) timeoutShare() float64 {
	if s.n == 0 {
		return 0
	}
	return float64(s.timeouts) / float64(s.n)
}

func (s stats) meanLatency() time.Duration {
	if s.timedN == 0 {
		return 0
	}
	return s.latency / time.Duration(s.timedN)
}

func (s stats) String() string {
	return fmt.Sprintf("%d attempts, %.0f%% failed, %.0f%% timeouts, mean %v", s.n, s.errorRate()*100, s.timeoutShare()*100, s.meanLatency())
}

func bucketWidth(w time.Duration) int64 { return max(int64(w)/10, 1) }

func (w *window) add(now time.Time, width time.Duration, o Outcome) {
	e := now.UnixNano() / bucketWidth(width)
	b := &w.b[e%10]
	if b.epoch != e {
		*b = bucket{epoch: e}
	}
	b.n++
	if o.Failed || o.Timeout {
		b.failed++
	}
	if o.Timeout {
		b.timeouts++
	}
	if !o.FastFail {
		b.timedN++
		b.latency += o.Latency
	}
}

func (w *window) stats(now time.Time, width time.Duration) stats {
	e := now.UnixNano() / bucketWidth(width)
	var s stats
	for _, b := range w.b {
		if b.n > 0 && b.epoch > e-10 && b.epoch <= e {
			s.n += b.n
			s.failed += b.failed
			s.timeouts += b.timeouts
			s.timedN += b.timedN
			s.latency += b.latency
		}
	}
	return s
}
