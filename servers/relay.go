package servers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
)

// Everything MCP besides tools is relayed between a vendor's connection
// and the MCP clients calling it:
//
//   - requests a client makes (resources/read, prompts/get, completions,
//     logging/setLevel, resources/subscribe) run on the vendor's
//     connection ([Manager.Complete], [Manager.SetLevel],
//     [Manager.Subscribe]); resources/read and
//     prompts/get arrive as relayed gateway calls (hub.Call.Method), so
//     they are governed and metered like tool calls;
//   - the vendor's server→client requests (sampling/createMessage,
//     elicitation/create, roots/list) go to the [hub.Peer] of the call they
//     belong to: over streamable HTTP the request arrives on the call's own
//     stream (its context carries the peer); over stdio and SSE nothing
//     but a progress token of the call's in the request's _meta ties it
//     to a call, so without one it goes to the one call in flight, and is
//     refused when there are several or that call has no MCP client
//     ([conn.peerFor]);
//   - the vendor's notifications/cancelled for such a request ends its
//     relay (the peer's context ends with cause [ErrVendorCancelled]);
//   - progress notifications go to the call whose progress token they
//     name (toolhub gives the vendor a token of its own per call and maps
//     it back); log messages go to the MCP callers in flight, or, when
//     there are none, to every client of the vendor ([Manager.OnEvent]);
//     resources/updated and list changes go to [Manager.OnEvent].

// Surface is what a vendor publishes besides tools, as last listed.
type Surface struct {
	Capabilities mcp.ServerCapabilities
	Resources    []mcp.Resource
	Templates    []mcp.ResourceTemplate
	Prompts      []mcp.Prompt
}

// Event is a vendor's notification for all its clients: resources/updated,
// resources/list_changed and prompts/list_changed (sent after the manager
// re-listed them), and log messages sent while no MCP caller was in flight.
type Event struct {
	Vendor       string
	Notification mcp.JSONRPCNotification
}

// OnEvent calls fn for every [Event] of every vendor, on the connection's
// reader: fn must not block. The returned func stops the calls.
func (m *Manager) OnEvent(fn func(Event)) (stop func()) {
	return m.events.Subscribe(fn)
}

func (m *Manager) emit(e Event) { m.events.Emit(e) }

// Surface returns a vendor's resources, templates, prompts and
// capabilities, as listed at its last connect or list change.
func (m *Manager) Surface(id string) (Surface, bool) {
	v, ok := m.set.Get(id)
	if !ok {
		return Surface{}, false
	}
	s := v.surface.Load()
	if s == nil {
		return Surface{}, false
	}
	return *s, true
}

// conn returns a vendor's ready connection, or the error of a call to it.
func (m *Manager) conn(id string) (*conn, error) {
	v, ok := m.set.Get(id)
	if !ok {
		return nil, &hub.Error{Code: hub.CodeUnavailable, Vendor: id, Message: fmt.Sprintf("vendor %q is not managed", id)}
	}
	c := v.cur.Load()
	if c == nil {
		return nil, v.notReady()
	}
	return c, nil
}

// Complete runs completion/complete on a vendor's connection.
func (m *Manager) Complete(ctx context.Context, id string, req mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	c, err := m.conn(id)
	if err != nil {
		return nil, err
	}
	return relayOn(ctx, c, "completion/complete", func(ctx context.Context) (*mcp.CompleteResult, error) {
		return c.client.Complete(ctx, req)
	})
}

// SetLevel runs logging/setLevel on a vendor's connection.
func (m *Manager) SetLevel(ctx context.Context, id string, level mcp.LoggingLevel) error {
	c, err := m.conn(id)
	if err != nil {
		return err
	}
	return c.setLevel(ctx, level)
}

// setLevel runs logging/setLevel on c.
func (c *conn) setLevel(ctx context.Context, level mcp.LoggingLevel) error {
	req := mcp.SetLevelRequest{}
	req.Params.Level = level
	if c.fast != nil && c.fast.modern {
		// On 2026-07-28 the level travels in every request's _meta, which
		// mcp-go keeps: tool calls take its path from now on.
		c.fast.off.Store(true)
	}
	_, err := relayOn(ctx, c, "logging/setLevel", func(ctx context.Context) (struct{}, error) {
		//lint:ignore SA1019 relayed for clients on revisions before 2026-07-28
		return struct{}{}, c.client.SetLevel(ctx, req)
	})
	return err
}

// Subscribe runs resources/subscribe (or, with unsubscribe,
// resources/unsubscribe) on a vendor's connection.
func (m *Manager) Subscribe(ctx context.Context, id, uri string, unsubscribe bool) error {
	c, err := m.conn(id)
	if err != nil {
		return err
	}
	return c.subscribe(ctx, uri, unsubscribe)
}

// subscribe runs resources/subscribe or resources/unsubscribe on c.
func (c *conn) subscribe(ctx context.Context, uri string, unsubscribe bool) error {
	var err error
	if unsubscribe {
		req := mcp.UnsubscribeRequest{}
		req.Params.URI = uri
		_, err = relayOn(ctx, c, "resources/unsubscribe", func(ctx context.Context) (struct{}, error) {
			//lint:ignore SA1019 mcp-go maps it onto the listen filter on 2026-07-28
			return struct{}{}, c.client.Unsubscribe(ctx, req)
		})
		return err
	}
	req := mcp.SubscribeRequest{}
	req.Params.URI = uri
	_, err = relayOn(ctx, c, "resources/subscribe", func(ctx context.Context) (struct{}, error) {
		//lint:ignore SA1019 mcp-go maps it onto the listen filter on 2026-07-28
		return struct{}{}, c.client.Subscribe(ctx, req)
	})
	return err
}

// relayOn runs one relayed request on c and classifies its error.
func relayOn[T any](ctx context.Context, c *conn, method string, run func(context.Context) (T, error)) (T, error) {
	var zero T
	if !c.gate.enter() {
		return zero, c.v.draining()
	}
	defer c.gate.leave()
	rec := &record{maxBytes: c.v.m.opts.MaxResponseBytes}
	res, err := run(withRecord(ctx, rec))
	if err != nil {
		e := classify(ctx, c.v.id, err, rec, c.v.red)
		c.observe(e)
		return zero, wrapMsg(method, e)
	}
	c.observe(nil)
	return res, nil
}

// relayCall runs a relayed gateway call (hub.Call.Method) on c.
func (c *conn) relayCall(ctx context.Context, call *hub.Call) (*hub.Result, error) {
	var (
		out any
		err error
	)
	switch call.Method {
	case string(mcp.MethodResourcesRead):
		req, ok := call.Params.(mcp.ReadResourceRequest)
		if !ok {
			break
		}
		req.Params.Meta = hopMeta(req.Params.Meta)
		out, err = relayOn(ctx, c, call.Method, func(ctx context.Context) (*mcp.ReadResourceResult, error) {
			return c.client.ReadResource(ctx, req)
		})
	case string(mcp.MethodCompletionComplete):
		req, ok := call.Params.(mcp.CompleteRequest)
		if !ok {
			break
		}
		out, err = relayOn(ctx, c, call.Method, func(ctx context.Context) (*mcp.CompleteResult, error) {
			return c.client.Complete(ctx, req)
		})
	case string(mcp.MethodPromptsGet):
		req, ok := call.Params.(mcp.GetPromptRequest)
		if !ok {
			break
		}
		req.Params.Meta = hopMeta(req.Params.Meta)
		out, err = relayOn(ctx, c, call.Method, func(ctx context.Context) (*mcp.GetPromptResult, error) {
			return c.client.GetPrompt(ctx, req)
		})
	case string(mcp.MethodSetLogLevel):
		if req, ok := call.Params.(mcp.SetLevelRequest); ok {
			if err = c.setLevel(ctx, req.Params.Level); err == nil {
				out = &mcp.EmptyResult{}
			}
		}
	case string(mcp.MethodResourcesSubscribe), string(mcp.MethodResourcesUnsubscribe):
		if req, ok := call.Params.(mcp.SubscribeRequest); ok {
			if err = c.subscribe(ctx, req.Params.URI, call.Method == string(mcp.MethodResourcesUnsubscribe)); err == nil {
				out = &mcp.EmptyResult{}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, &hub.Error{Code: hub.CodeInternal, Vendor: c.v.id, Message: fmt.Sprintf("toolhub does not relay %q as a call", call.Method)}
	}
	return &hub.Result{Relayed: out}, nil
}

// hopMeta returns a client's request _meta without the keys of its own
// hop to toolhub (io.modelcontextprotocol/protocolVersion,
// clientCapabilities, clientInfo, logLevel on 2026-07-28): the vendor's
// hop has its own revision and capabilities, and a vendor refuses a
// request whose protocolVersion differs from its connection's. What else
// the client put there (progressToken, trace context) goes on.
func hopMeta(m *mcp.Meta) *mcp.Meta {
	if m == nil {
		return nil
	}
	return keptMeta(m.ProgressToken, m.AdditionalFields, func(k string) bool { return strings.HasPrefix(k, "io.modelcontextprotocol/") })
}

// syncSurface lists the vendor's resources, templates and prompts (those
// its capabilities announce) and keeps them for [Manager.Surface].
func (v *vendor) syncSurface(ctx context.Context, c *conn) error {
	s := &Surface{Capabilities: c.caps}
	if c.caps.Resources != nil {
		rs, err := c.client.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			return fmt.Errorf("resource sync: %w", err)
		}
		ts, err := c.client.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
		if err != nil {
			return fmt.Errorf("resource template sync: %w", err)
		}
		s.Resources, s.Templates = rs.Resources, ts.ResourceTemplates
	}
	if c.caps.Prompts != nil {
		ps, err := c.client.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil {
			return fmt.Errorf("prompt sync: %w", err)
		}
		s.Prompts = ps.Prompts
	}
	if len(s.Resources) > MaxTools || len(s.Templates) > MaxTools || len(s.Prompts) > MaxTools {
		return fmt.Errorf("vendor %q lists more than %d resources, templates or prompts", v.id, MaxTools)
	}
	v.surface.Store(s)
	for _, m := range []string{mcp.MethodNotificationResourcesListChanged, mcp.MethodNotificationPromptsListChanged} {
		n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION}
		n.Method = m
		v.m.emit(Event{Vendor: v.id, Notification: n})
	}
	return nil
}

// relayState is what a connection knows of the MCP callers it serves now.
type relayState struct {
	mu       sync.Mutex
	peers    map[uint64]hub.Peer                // MCP callers with a call in flight
	progress map[string]progressTo              // toolhub's progress token → the caller's
	pending  map[string]context.CancelCauseFunc // vendor's request id (JSON) → its relay's cancel
	next     atomic.Uint64
}

// ErrVendorCancelled is the cause of a relayed server→client request's
// context ending because the vendor sent notifications/cancelled for it:
// the MCP client is told with notifications/cancelled of its own.
var ErrVendorCancelled = errors.New("toolhub: the vendor cancelled its request")

// pend notes a vendor's server→client request being relayed: its context
// ends, with cause [ErrVendorCancelled] (wrapped with the vendor's reason),
// when the vendor cancels it.
func (r *relayState) pend(ctx context.Context) (context.Context, func()) {
	req := vendorRequestFrom(ctx)
	if req == nil || req.ID.IsNil() {
		return ctx, func() {}
	}
	key := requestKey(req.ID)
	ctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	if r.pending == nil {
		r.pending = map[string]context.CancelCauseFunc{}
	}
	r.pending[key] = cancel
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.pending, key)
		r.mu.Unlock()
		cancel(nil)
	}
}

// cancelRequest ends the relay of the vendor's request id.
func (r *relayState) cancelRequest(id any, reason string) bool {
	key := requestKey(id)
	r.mu.Lock()
	cancel, ok := r.pending[key]
	r.mu.Unlock()
	if ok {
		err := ErrVendorCancelled
		if reason != "" {
			err = fmt.Errorf("%w: %s", ErrVendorCancelled, reason)
		}
		cancel(err)
	}
	return ok
}

// requestKey is a JSON-RPC id as its JSON text: 1 and "1" differ.
func requestKey(id any) string {
	b, _ := json.Marshal(id)
	return string(b)
}

type progressTo struct {
	peer  hub.Peer
	token any
}

func (r *relayState) enter(p hub.Peer) uint64 {
	id := r.next.Add(1)
	r.mu.Lock()
	if r.peers == nil {
		r.peers = map[uint64]hub.Peer{}
	}
	r.peers[id] = p
	r.mu.Unlock()
	return id
}

func (r *relayState) leave(id uint64) {
	r.mu.Lock()
	delete(r.peers, id)
	r.mu.Unlock()
}

// track gives a caller's progress token a token of toolhub's own, unique
// on the connection (callers' tokens are unique only per session).
func (r *relayState) track(p hub.Peer, token any) string {
	t := "toolhub-" + strconv.FormatUint(r.next.Add(1), 10)
	r.mu.Lock()
	if r.progress == nil {
		r.progress = map[string]progressTo{}
	}
	r.progress[t] = progressTo{peer: p, token: token}
	r.mu.Unlock()
	return t
}

func (r *relayState) untrack(t string) {
	r.mu.Lock()
	delete(r.progress, t)
	r.mu.Unlock()
}

func (r *relayState) route(t string) (progressTo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.progress[t]
	return p, ok
}

// calls returns the peer of every MCP call in flight, one per call.
func (r *relayState) calls() []hub.Peer {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]hub.Peer, 0, len(r.peers))
	for _, p := range r.peers {
		out = append(out, p)
	}
	return out
}

func (r *relayState) inFlight() []hub.Peer {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]hub.Peer, 0, len(r.peers))
	seen := map[hub.Peer]bool{}
	for _, p := range r.peers {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// errNoCaller is the answer to a vendor's request no MCP caller can take.
var errNoCaller = errors.New("toolhub: no MCP client to relay this request to")

type vendorRequestKey struct{}

// withVendorRequest gives a vendor's server→client request's handler the
// raw request in its context.
func withVendorRequest(h transport.RequestHandler) transport.RequestHandler {
	return func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		return h(context.WithValue(ctx, vendorRequestKey{}, &req), req)
	}
}

// vendorRequestFrom returns the raw server→client request being handled.
func vendorRequestFrom(ctx context.Context) *transport.JSONRPCRequest {
	r, _ := ctx.Value(vendorRequestKey{}).(*transport.JSONRPCRequest)
	return r
}

// relatedToken returns the progress token a vendor's request names in its
// _meta: a token toolhub gave one call, which ties the request to it.
func relatedToken(req *transport.JSONRPCRequest) string {
	if req == nil || req.Params == nil {
		return ""
	}
	b, err := json.Marshal(req.Params)
	if err != nil {
		return ""
	}
	var p struct {
		Meta struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	s, _ := p.Meta.ProgressToken.(string)
	return s
}

// peerFor finds the MCP client a vendor's server→client request is for:
//
//   - over streamable HTTP the request comes on the call's own stream, and
//     its context carries the call's peer;
//   - a request whose _meta names the progress token toolhub gave a call
//     (on any transport) is for that call;
//   - otherwise (stdio and SSE: nothing on the wire ties the request to a
//     call), it is for the one call in flight on the connection, counting
//     every caller's calls, MCP or not.
//
// It refuses, never guesses, when that leaves no call, several calls, or a
// call that is not an MCP client's (REST, A2A, a job, a relayed read).
func (c *conn) peerFor(ctx context.Context, method, capability string) (hub.Peer, error) {
	p := hub.PeerFrom(ctx)
	if p == nil {
		if tok := relatedToken(vendorRequestFrom(ctx)); tok != "" {
			if to, ok := c.relay.route(tok); ok {
				p = to.peer
			}
		}
	}
	if p == nil {
		calls, ps := c.gate.count(), c.relay.calls()
		switch {
		case calls == 0:
			return nil, fmt.Errorf("%w: %s from vendor %q came while no call was in flight", errNoCaller, method, c.v.id)
		case calls > 1:
			return nil, fmt.Errorf("%w: %s from vendor %q is not tied to one call (%d calls are in flight on its %s connection, and the request names none of them: over %s only a request whose _meta names its call's progressToken can be routed)",
				errNoCaller, method, c.v.id, calls, c.v.spec.MCP.Transport, c.v.spec.MCP.Transport)
		case len(ps) == 0:
			return nil, fmt.Errorf("%w: %s from vendor %q came during a call not from an MCP client (REST, A2A, a job or a relayed request), which cannot answer it", errNoCaller, method, c.v.id)
		case len(ps) > 1:
			// A call counted by the peers but not (yet) by the gate: do not guess.
			return nil, fmt.Errorf("%w: %s from vendor %q is not tied to one call (%d MCP clients have calls in flight on its %s connection)",
				errNoCaller, method, c.v.id, len(ps), c.v.spec.MCP.Transport)
		}
		p = ps[0]
	}
	if !p.Declared(method) {
		return nil, fmt.Errorf("toolhub: the MCP client of this call did not declare the %s capability, so vendor %q cannot send it %s", capability, c.v.id, method)
	}
	return p, nil
}

// relayHandler answers a vendor's server→client requests by asking the
// MCP client of the call.
type relayHandler struct{ c *conn }

var (
	_ client.SamplingHandler    = relayHandler{}
	_ client.ElicitationHandler = relayHandler{}
	_ client.RootsHandler       = relayHandler{}
)

func (h relayHandler) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return relayRequest(ctx, h.c, mcp.MethodSamplingCreateMessage, "sampling",
		func(ctx context.Context, p hub.Peer) (*mcp.CreateMessageResult, error) {
			return p.CreateMessage(ctx, req)
		})
}

func (h relayHandler) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return relayRequest(ctx, h.c, mcp.MethodElicitationCreate, "elicitation",
		func(ctx context.Context, p hub.Peer) (*mcp.ElicitationResult, error) { return p.Elicit(ctx, req) })
}

func (h relayHandler) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return relayRequest(ctx, h.c, mcp.MethodListRoots, "roots",
		func(ctx context.Context, p hub.Peer) (*mcp.ListRootsResult, error) { return p.ListRoots(ctx, req) })
}

// relayRequest asks the MCP client of the call (see conn.peerFor: it must
// have declared capability) to answer the vendor's request for method,
// with the request pending on c while ask runs.
func relayRequest[R any](ctx context.Context, c *conn, method mcp.MCPMethod, capability string, ask func(context.Context, hub.Peer) (R, error)) (R, error) {
	p, err := c.peerFor(ctx, string(method), capability)
	if err != nil {
		var zero R
		return zero, err
	}
	ctx, done := c.relay.pend(ctx)
	defer done()
	return ask(ctx, p)
}

// relayNotification handles the notifications that are not about tools; it
// runs on the transport's reader and must not block.
func (c *conn) relayNotification(n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		params := notificationParams(n)
		tok, _ := params["progressToken"].(string)
		to, ok := c.relay.route(tok)
		if !ok {
			return // a call that ended, or not one of ours
		}
		params["progressToken"] = to.token
		_ = to.peer.Notify(n.Method, params)
	case string(mcp.MethodNotificationMessage):
		if ps := c.relay.inFlight(); len(ps) > 0 {
			params := notificationParams(n)
			for _, p := range ps {
				_ = p.Notify(n.Method, params)
			}
			return
		}
		c.v.m.emit(Event{Vendor: c.v.id, Notification: n})
	case string(mcp.MethodNotificationCancelled):
		// The vendor gave up on a request it sent toolhub (sampling,
		// elicitation, roots): end its relay; the MCP client is told.
		params := notificationParams(n)
		reason, _ := params["reason"].(string)
		c.relay.cancelRequest(params["requestId"], reason)
	case string(mcp.MethodNotificationResourceUpdated):
		c.v.m.emit(Event{Vendor: c.v.id, Notification: n})
	case string(mcp.MethodNotificationResourcesListChanged), string(mcp.MethodNotificationPromptsListChanged):
		c.v.kick(c.v.resurface)
	}
}

// notificationParams returns a notification's params as a JSON object.
func notificationParams(n mcp.JSONRPCNotification) map[string]any {
	out := map[string]any{}
	b, err := json.Marshal(n.Params)
	if err == nil {
		_ = json.Unmarshal(b, &out)
	}
	return out
}
