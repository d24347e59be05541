package servers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/vendorconn"
	"github.com/toolhub/toolhub/registry"
)

// State is where a vendor's connection stands.
type State string

// The states of a vendor.
const (
	StateConnecting  State = "connecting"  // dialling, initializing, listing tools
	StateReady       State = "ready"       // connected; takes calls
	StateUnavailable State = "unavailable" // down; retrying with backoff
	StateDisabled    State = "disabled"    // disabled in its spec; not connected
)

// VendorStatus is what the manager knows of one vendor. It never holds a
// secret: values taken from the environment are redacted from errors.
type VendorStatus struct {
	ID        string `json:"id"`
	Transport string `json:"transport"` // stdio | http | sse
	State     State  `json:"state"`     // "" for an id the manager does not hold

	LastError      string    `json:"last_error,omitempty"` // the latest failure, redacted
	LastErrorAt    time.Time `json:"last_error_at,omitzero"`
	ConnectedSince time.Time `json:"connected_since,omitzero"` // while ready
	NextAttempt    time.Time `json:"next_attempt,omitzero"`    // while unavailable
	Restarts       int       `json:"restarts"`                 // connections lost and re-dialled (stdio: process restarts)

	Tools        int            `json:"tools"`              // the vendor's tools in the catalog
	Rejected     []RejectedTool `json:"rejected,omitempty"` // tools left out at the last sync
	LastToolSync time.Time      `json:"last_tool_sync,omitzero"`
	// ListChanges counts the notifications/tools/list_changed the vendor
	// sent; ToolSyncs the tool lists taken (debounced: see
	// Options.ResyncInterval).
	ListChanges int64 `json:"list_changes"`
	ToolSyncs   int64 `json:"tool_syncs"`

	Protocol string `json:"protocol,omitempty"` // negotiated MCP revision
	Server   string `json:"server,omitempty"`   // the server's name and version
	PID      int    `json:"pid,omitempty"`      // stdio: the running process
	InFlight int    `json:"in_flight"`          // calls on the connection now
}

// RejectedTool is a vendor tool left out of the catalog, and why.
type RejectedTool struct {
	Tool  string `json:"tool"`
	Part  string `json:"part,omitempty"` // "input schema", "output schema", "name", "definition"
	Error string `json:"error"`
}

// vendor supervises the connection to one vendor. It is the vendor's
// hub.Invoker. A vendor object lives for one connection spec: an update
// that changes how to connect replaces it.
type vendor struct {
	m   *Manager
	id  string
	log *slog.Logger
	red *vendorconn.Redactor

	spec registry.Vendor // MCP and Disabled never change; see Manager.Update

	ctx    context.Context // the supervisor's lifetime
	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has exited
	drain  atomic.Bool   // on stop, let in-flight calls finish

	resync    chan struct{} // re-list tools
	resurface chan struct{} // re-list resources, templates and prompts
	surface   atomic.Pointer[Surface]
	probeNow  chan struct{} // probe the connection

	legacyListen atomic.Bool // a legacy HTTP server that needs the GET stream

	listChanges, toolSyncs atomic.Int64 // see VendorStatus

	cur atomic.Pointer[conn] // the ready connection, or nil
	// readyC is closed when cur is set; a fresh one is put in before cur
	// is cleared (see [vendor.ready]).
	readyC atomic.Pointer[chan struct{}]

	mu      sync.Mutex
	st      VendorStatus
	retired chan struct{} // closed once the last connection is closed
}

var _ hub.Invoker = (*vendor)(nil)

func newVendor(m *Manager, spec registry.Vendor) *vendor {
	ctx, cancel := context.WithCancel(context.Background())
	v := &vendor{
		m:         m,
		id:        spec.ID,
		log:       m.opts.Logger.With("vendor", spec.ID),
		red:       &vendorconn.Redactor{},
		spec:      spec,
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		resync:    make(chan struct{}, 1),
		resurface: make(chan struct{}, 1),
		probeNow:  make(chan struct{}, 1),
		retired:   make(chan struct{}),
	}
	ch := make(chan struct{})
	v.readyC.Store(&ch)
	v.st = VendorStatus{ID: spec.ID, Transport: spec.MCP.Transport, State: StateConnecting,
		Tools: len(m.cat.VendorTools(spec.ID))} // kept from before, if any
	if spec.Disabled {
		v.st.State = StateDisabled
	}
	return v
}

// Start runs the supervisor (not for a disabled vendor).
func (v *vendor) Start() {
	if v.spec.Disabled {
		close(v.done)
		close(v.retired)
		return
	}
	go v.run()
}

// Stop ends the supervisor. With drain, the connection takes no new calls
// and closes once those in flight are done (at most DrainTimeout);
// without, it closes at once. Stop returns when the supervisor has
// exited; Retired is closed when the connection is.
func (v *vendor) Stop(drain bool) {
	v.drain.Store(drain)
	v.cancel()
	<-v.done
}

// Retired is closed once the vendor's last connection is closed.
func (v *vendor) Retired() <-chan struct{} { return v.retired }

// Spec returns a copy of the vendor's spec.
func (v *vendor) Spec() registry.Vendor {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.spec.Clone()
}

// Invoke calls the vendor's tool c.Tool on the vendor's connection. A
// vendor that is not ready fails at once with unavailable.
func (v *vendor) Invoke(ctx context.Context, c *hub.Call) (*hub.Result, error) {
	if c.Tool == nil || c.Tool.Vendor != v.id {
		return nil, &hub.Error{Code: hub.CodeInternal, Vendor: v.id, Message: fmt.Sprintf("vendor %q was given a call without one of its tools", v.id)}
	}
	conn := v.ready(ctx)
	if conn == nil {
		return nil, v.notReady()
	}
	return conn.call(ctx, c)
}

// ready returns the ready connection. While one is being made (the
// vendor's tools may be listed already) it waits for it up to
// Options.ConnectWait or until ctx ends; nil when there is none then.
func (v *vendor) ready(ctx context.Context) *conn {
	ch := *v.readyC.Load()
	if c := v.cur.Load(); c != nil || v.m.opts.ConnectWait < 0 || v.Status().State != StateConnecting {
		return c
	}
	t := time.NewTimer(v.m.opts.ConnectWait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	case <-v.ctx.Done():
	}
	return v.cur.Load()
}

// setCur sets (or, with nil, clears) the ready connection and wakes the
// calls waiting for one.
func (v *vendor) setCur(c *conn) {
	if c == nil {
		ch := make(chan struct{})
		v.readyC.Store(&ch)
		v.cur.Store(nil)
		return
	}
	v.cur.Store(c)
	close(*v.readyC.Load())
}

// notReady is the error of a call to a vendor without a connection.
func (v *vendor) notReady() *hub.Error {
	v.mu.Lock()
	st := v.st
	v.mu.Unlock()
	e := &hub.Error{Code: hub.CodeUnavailable, Vendor: v.id}
	switch st.State {
	case StateDisabled:
		e.Message = fmt.Sprintf("vendor %q is disabled", v.id)
	case StateConnecting:
		// The hub's own state, not the vendor's failure (a failed dial is
		// counted by the supervisor as the vendor's).
		e.Message = fmt.Sprintf("vendor %q is connecting", v.id)
		e.HubState = true
	default:
		e.Message = fmt.Sprintf("vendor %q is unavailable", v.id)
		if st.LastError != "" {
			e.Message += ": " + st.LastError
		}
	}
	if !st.NextAttempt.IsZero() {
		if d := st.NextAttempt.Sub(v.m.opts.Now()); d > 0 {
			e.RetryAfter = d
		}
	}
	return e
}

// draining is the error of a call to a connection that takes no new
// calls (replaced, removed or closing): the hub's own state.
func (v *vendor) draining() *hub.Error {
	e := v.notReady()
	e.HubState = true
	return e
}

// kick sends a non-blocking signal.
func (v *vendor) kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run is the supervisor: connect, serve, and reconnect with backoff, until
// stopped. Between connections the vendor is unavailable and calls fail
// fast. The vendor's tools stay in the catalog meanwhile (see the package
// doc).
func (v *vendor) run() {
	defer close(v.done)
	if c := v.loop(); c != nil {
		v.retire(c)
	} else {
		close(v.retired)
	}
}

// loop runs until the vendor is stopped, and returns the connection that
// was ready then, if any.
func (v *vendor) loop() *conn {
	b := v.m.opts.RestartBackoff
	fails := 0 // failed or short-lived connections in a row
	for {
		v.update(func(st *VendorStatus) { st.State = StateConnecting; st.NextAttempt = time.Time{} })
		c, err := v.dial(v.ctx)
		if err != nil {
			if v.ctx.Err() != nil || !v.wait(err, b.Delay(fails)) {
				return nil
			}
			fails++
			continue
		}
		v.setCur(c)
		v.update(func(st *VendorStatus) {
			st.State = StateReady
			st.ConnectedSince = c.since
			st.Protocol = c.protocol
			st.Server = c.server.Name
			if c.server.Version != "" {
				st.Server += "/" + c.server.Version
			}
			st.PID = 0
			if c.proc != nil {
				st.PID = c.proc.pid()
			}
		})
		v.log.Info("vendor ready", "transport", v.spec.MCP.Transport, "protocol", c.protocol, "tools", v.Status().Tools)

		lostErr := v.serve(c)
		v.setCur(nil)
		if v.ctx.Err() != nil {
			return c
		}
		c.close()
		if v.m.opts.Now().Sub(c.since) >= b.Max {
			fails = 0 // it ran well for a while: start the backoff over
		}
		v.update(func(st *VendorStatus) { st.Restarts++ })
		if !v.wait(fmt.Errorf("connection lost: %w", lostErr), b.Delay(fails)) {
			return nil
		}
		fails++
	}
}

// wait marks the vendor unavailable with err until the next attempt.
// It reports false when the vendor is stopped meanwhile.
func (v *vendor) wait(err error, d time.Duration) bool {
	msg := errText(err, v.red)
	now := v.m.opts.Now()
	v.update(func(st *VendorStatus) {
		st.State = StateUnavailable
		st.LastError, st.LastErrorAt = msg, now
		st.ConnectedSince, st.PID = time.Time{}, 0
		st.NextAttempt = now.Add(d)
	})
	v.log.Warn("vendor unavailable", "error", msg, "retry_in", d.Round(time.Millisecond).String())
	return vendorconn.Sleep(v.ctx, d)
}

// retire closes a connection of a stopped vendor, letting in-flight calls
// finish first when asked to (see vendorconn.Lifecycle.Retire).
func (v *vendor) retire(c *conn) {
	var drain func() <-chan struct{}
	if v.drain.Load() {
		drain = c.gate.drain // new calls are let go now; those in flight finish on c
	}
	v.m.life.Retire(drain, v.m.opts.DrainTimeout,
		func() {
			v.log.Warn("closing the old connection with calls still in flight", "in_flight", c.gate.count())
		},
		func() {
			c.close()
			close(v.retired)
		})
}

// serve watches a ready connection until it is lost or the vendor stops:
// it re-syncs tools on request and probes the connection's health.
func (v *vendor) serve(c *conn) error {
	o := &v.m.opts
	var tick <-chan time.Time
	if o.HealthInterval > 0 {
		t := time.NewTicker(o.HealthInterval)
		defer t.Stop()
		tick = t.C
	}
	// Tool syncs are debounced: at most one per ResyncInterval, however
	// often the vendor says its list changed; a change asked for meanwhile
	// is synced when the interval ends (none is lost).
	lastSync := time.Now() // dial has just listed the tools
	var later <-chan time.Time
	var laterTimer *time.Timer
	defer func() {
		if laterTimer != nil {
			laterTimer.Stop()
		}
	}()
	for {
		select {
		case <-v.ctx.Done():
			return nil
		case <-c.lost:
			return c.lostErr
		case <-v.resync:
			if wait := o.ResyncInterval - time.Since(lastSync); wait > 0 {
				if later == nil {
					laterTimer = time.NewTimer(wait)
					later = laterTimer.C
				}
				continue
			}
			lastSync = v.resyncNow(c)
		case <-later:
			later, laterTimer = nil, nil
			lastSync = v.resyncNow(c)
		case <-v.resurface:
			ctx, cancel := context.WithTimeout(v.ctx, o.ToolSyncTimeout)
			err := v.syncSurface(ctx, c)
			cancel()
			if err != nil && v.ctx.Err() == nil {
				v.noteError(err)
			}
		case <-v.probeNow:
			v.probe(c)
		case <-tick:
			v.probe(c)
		}
	}
}

// resyncNow lists the vendor's tools again on c, and returns when it
// started.
func (v *vendor) resyncNow(c *conn) time.Time {
	o := &v.m.opts
	start := time.Now()
	ctx, cancel := context.WithTimeout(v.ctx, o.ToolSyncTimeout)
	err := v.syncTools(ctx, c)
	cancel()
	if err != nil && v.ctx.Err() == nil {
		v.noteError(err)
		var he *hub.Error
		if errors.As(err, &he) {
			c.observe(he)
		}
	}
	return start
}

// probe checks a connection; failures in a row give it up.
func (v *vendor) probe(c *conn) {
	o := &v.m.opts
	ctx, cancel := context.WithTimeout(v.ctx, min(o.ConnectTimeout, 10*time.Second))
	defer cancel()
	err := c.probe(ctx)
	if v.ctx.Err() != nil {
		return
	}
	if err == nil || !(connFailure(err) || ctx.Err() != nil) {
		c.fails.Store(0) // it answered
		return
	}
	n := c.fails.Add(1)
	v.log.Debug("health probe failed", "failures", n, "error", errText(err, v.red))
	if n >= failureThreshold {
		c.markLost(fmt.Errorf("health probe failed %d times in a row, last: %w", n, err))
		return
	}
	time.AfterFunc(o.RestartBackoff.Min, func() { v.kick(v.probeNow) })
}

// syncTools lists the vendor's tools and puts them in the catalog.
func (v *vendor) syncTools(ctx context.Context, c *conn) error {
	v.toolSyncs.Add(1)
	defs, bad, err := c.listTools(ctx)
	var rpc *RPCError
	if err != nil && c.caps.Tools == nil && errors.As(err, &rpc) && rpc.Code == mcp.METHOD_NOT_FOUND {
		err = nil // a server without tools, and it says so
	}
	if err != nil {
		return fmt.Errorf("tool sync: %w", err)
	}
	errs, ok := v.m.setTools(v, defs)
	if !ok {
		return nil // replaced or removed meanwhile
	}
	all := append(bad, errs...)
	rej := rejected(all)
	v.mu.Lock()
	same := slices.Equal(rej, v.st.Rejected)
	v.mu.Unlock()
	if !same {
		// Logged when they change, not at every re-sync or reconnect.
		for _, r := range rej {
			v.log.Warn("vendor tool rejected", "tool", r.Tool, "part", r.Part, "error", v.red.Redact(r.Error))
		}
	}
	n := len(v.m.cat.VendorTools(v.id))
	now := v.m.opts.Now()
	v.update(func(st *VendorStatus) {
		st.Tools, st.Rejected, st.LastToolSync = n, rej, now
	})
	v.log.Debug("tools synced", "tools", n, "rejected", len(rej))
	return nil
}

// noteError records a failure that did not end the connection.
func (v *vendor) noteError(err error) {
	msg := errText(err, v.red)
	now := v.m.opts.Now()
	v.update(func(st *VendorStatus) { st.LastError, st.LastErrorAt = msg, now })
	v.log.Warn("vendor error", "error", msg)
}

// update changes the status and reports it to Options.OnChange.
func (v *vendor) update(fn func(*VendorStatus)) {
	v.mu.Lock()
	fn(&v.st)
	st := v.snapshotLocked()
	v.mu.Unlock()
	if f := v.m.opts.OnChange; f != nil {
		f(st)
	}
}

// Status is the vendor's status now.
func (v *vendor) Status() VendorStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.snapshotLocked()
}

func (v *vendor) snapshotLocked() VendorStatus {
	st := v.st
	st.Rejected = slices.Clone(st.Rejected)
	st.ListChanges, st.ToolSyncs = v.listChanges.Load(), v.toolSyncs.Load()
	if c := v.cur.Load(); c != nil {
		st.InFlight = c.gate.count()
	}
	return st
}

// stdioEnv is the environment of a stdio vendor: the variables named in
// Options.InheritEnv (through LookupEnv), then the spec's env with ${VAR}
// expanded. Nothing else of toolhub's environment reaches the vendor.
func (v *vendor) stdioEnv() ([]string, error) {
	o := &v.m.opts
	env := []string{} // not nil: a nil Env would inherit everything
	if o.LookupEnv != nil {
		for _, name := range o.InheritEnv {
			if _, set := v.spec.MCP.Env[name]; set {
				continue
			}
			if val, ok := o.LookupEnv(name); ok {
				env = append(env, name+"="+val)
			}
		}
	}
	keys := make([]string, 0, len(v.spec.MCP.Env))
	for k := range v.spec.MCP.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		val, err := v.red.Expand(v.spec.MCP.Env[k], o.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		env = append(env, k+"="+val)
	}
	return env, nil
}
