package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/servers"
)

// Relay reaches vendors' MCP sessions for what is not a tool call:
// resources, templates and prompts as last listed, completions, logging
// levels and resource subscriptions, and the vendors' notifications for all
// their clients. [servers.Manager] is one. resources/read and prompts/get
// run through the gateway ([hub.Gateway.Relay]) so they are governed and
// metered like tool calls.
type Relay interface {
	Surface(vendor string) (servers.Surface, bool)
	Complete(ctx context.Context, vendor string, req mcp.CompleteRequest) (*mcp.CompleteResult, error)
	SetLevel(ctx context.Context, vendor string, level mcp.LoggingLevel) error
	Subscribe(ctx context.Context, vendor, uri string, unsubscribe bool) error
	OnEvent(fn func(servers.Event)) (stop func())
}

// catchAllTemplate matches every resource URI: reads of URIs a vendor did
// not list (or lists past a page) still reach it. It is left out of
// resources/templates/list.
const catchAllTemplate = "toolhub-any-resource"

// relayOptions are the options of a per-vendor MCP server: every
// capability toolhub relays. At initialize a client sees only those the
// vendor has (trimCapabilities).
func (f *mcpFront) relayOptions(vendor string) []server.ServerOption {
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		f.trimCapabilities(vendor, &res.Capabilities)
	})
	hooks.AddAfterListResourceTemplates(func(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
		out := res.ResourceTemplates[:0]
		for _, t := range res.ResourceTemplates {
			if t.Name != catchAllTemplate {
				out = append(out, t)
			}
		}
		res.ResourceTemplates = out
		if !f.s.gw.VendorVisible(TenantFrom(ctx), vendor) {
			res.ResourceTemplates = []mcp.ResourceTemplate{}
		}
	})
	hooks.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		if !f.s.gw.VendorVisible(TenantFrom(ctx), vendor) {
			res.Resources = []mcp.Resource{}
		}
	})
	hooks.AddAfterSetLevel(func(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		if f.s.opts.Relay == nil || !f.s.gw.VendorVisible(TenantFrom(ctx), vendor) {
			return
		}
		// Through the gateway, metered like completion/complete. The
		// level carries no data of the tenant's: L0 for the privacy gate.
		call := &hub.Call{Tenant: TenantFrom(ctx), Method: string(mcp.MethodSetLogLevel),
			Params: mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: req.Params.Level}}}
		if _, err := f.s.gw.Relay(ctx, vendor, call); err != nil {
			f.s.log.Debug("logging/setLevel not relayed", "vendor", vendor, "error", err)
		}
	})
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		f.subscribe(ctx, vendor, req.Params.URI, false)
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		f.subscribe(ctx, vendor, req.Params.URI, true)
	})
	hooks.AddOnUnregisterSession(func(ctx context.Context, s server.ClientSession) {
		if f.s.opts.Relay != nil {
			f.dropSession(vendor, s.SessionID())
		}
	})
	comp := &relayCompletion{f: f, vendor: vendor}
	return []server.ServerOption{
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithCompletions(),
		server.WithLogging(),
		server.WithPromptCompletionProvider(comp),
		server.WithResourceCompletionProvider(comp),
		server.WithPromptFilter(func(ctx context.Context, ps []mcp.Prompt) []mcp.Prompt {
			if !f.s.gw.VendorVisible(TenantFrom(ctx), vendor) {
				return nil
			}
			return ps
		}),
		server.WithHooks(hooks),
	}
}

// trimCapabilities leaves in caps only what the vendor has.
func (f *mcpFront) trimCapabilities(vendor string, caps *mcp.ServerCapabilities) {
	var vc mcp.ServerCapabilities
	if f.s.opts.Relay != nil {
		s, _ := f.s.opts.Relay.Surface(vendor)
		vc = s.Capabilities
	}
	if vc.Resources == nil {
		caps.Resources = nil
	} else if caps.Resources != nil {
		r := *caps.Resources
		r.Subscribe = r.Subscribe && vc.Resources.Subscribe
		caps.Resources = &r
	}
	if vc.Prompts == nil {
		caps.Prompts = nil
	}
	if vc.Completions == nil {
		caps.Completions = nil
	}
	if vc.Logging == nil {
		caps.Logging = nil
	}
	if vc.Elicitation == nil {
		caps.Elicitation = nil
	}
}

// refreshSurface puts a vendor's resources, templates and prompts on every
// tenant's MCP server of that vendor; mcp-go tells connected clients the
// lists changed.
func (f *mcpFront) refreshSurface(vendor string) {
	for _, k := range f.keys(vendor) {
		f.fillSurface(k)
	}
}

// serverOf returns the MCP server of k, or nil when none was made yet.
func (f *mcpFront) serverOf(k frontKey) *server.MCPServer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fs := f.servers[k]; fs != nil {
		return fs.srv
	}
	return nil
}

// fillRelay gives a new server what is relayed besides tools.
func (f *mcpFront) fillRelay(k frontKey) {
	if k.vendor == "" {
		f.fillAggregate(k)
		return
	}
	f.fillSurface(k)
}

// fillSurface puts k.vendor's resources, templates and prompts on k's server.
func (f *mcpFront) fillSurface(k frontKey) {
	if f.s.opts.Relay == nil {
		return
	}
	vendor := k.vendor
	s, ok := f.s.opts.Relay.Surface(vendor)
	srv := f.serverOf(k)
	if !ok || srv == nil {
		return
	}
	read := f.readResource(vendor)
	rs := make([]server.ServerResource, 0, len(s.Resources))
	for _, r := range s.Resources {
		rs = append(rs, server.ServerResource{Resource: r, Handler: read})
	}
	ts := make([]server.ServerResourceTemplate, 0, len(s.Templates)+1)
	for _, t := range s.Templates {
		if t.URITemplate != nil {
			ts = append(ts, server.ServerResourceTemplate{Template: t, Handler: server.ResourceTemplateHandlerFunc(read)})
		}
	}
	if s.Capabilities.Resources != nil {
		ts = append(ts, server.ServerResourceTemplate{Template: mcp.NewResourceTemplate("{+uri}", catchAllTemplate), Handler: server.ResourceTemplateHandlerFunc(read)})
	}
	ps := make([]server.ServerPrompt, 0, len(s.Prompts))
	for _, p := range s.Prompts {
		ps = append(ps, server.ServerPrompt{Prompt: p, Handler: f.getPrompt(vendor)})
	}
	srv.SetResources(rs...)
	srv.SetResourceTemplates(ts...)
	srv.SetPrompts(ps...)
}

// readResource relays resources/read through the gateway.
func (f *mcpFront) readResource(vendor string) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		req.Params.Arguments = nil // mcp-go's template match, not the client's
		r, err := relay[mcp.ReadResourceResult](ctx, f.s, vendor, mcp.MethodResourcesRead, req, req.Params.Meta)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return []mcp.ResourceContents{}, nil
		}
		return r.Contents, nil
	}
}

// getPrompt relays prompts/get through the gateway.
func (f *mcpFront) getPrompt(vendor string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		r, err := relay[mcp.GetPromptResult](ctx, f.s, vendor, mcp.MethodPromptsGet, req, req.Params.Meta)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{}}, nil
		}
		return r, nil
	}
}

// relayCompletion relays completion/complete to the vendor.
type relayCompletion struct {
	f      *mcpFront
	vendor string
}

func (c *relayCompletion) complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	if c.f.s.opts.Relay == nil || !c.f.s.gw.VendorVisible(TenantFrom(ctx), c.vendor) {
		return &mcp.Completion{Values: []string{}}, nil
	}
	req := mcp.CompleteRequest{}
	req.Params.Ref = ref
	req.Params.Argument = arg
	req.Params.Context = cc
	// Through the gateway, as prompts/get is: the privacy gate, the
	// vendor's redact rules, limits, breaker, metering.
	r, err := relay[mcp.CompleteResult](ctx, c.f.s, c.vendor, mcp.MethodCompletionComplete, req, nil)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return &mcp.Completion{Values: []string{}}, nil
	}
	return &r.Completion, nil
}

// relay sends a client's request for method (req, with its _meta) through
// the gateway to vendor, and returns the vendor's answer: nil when it sent
// none of type R.
func relay[R any](ctx context.Context, s *Server, vendor string, method mcp.MCPMethod, req any, meta *mcp.Meta) (*R, error) {
	c, err := s.relayedCall(ctx, string(method), req, meta)
	if err != nil {
		return nil, err
	}
	res, err := s.gw.Relay(ctx, vendor, c)
	if err != nil {
		return nil, err
	}
	r, _ := res.Relayed.(*R)
	return r, nil
}

// relayedCall is the gateway call of a relayed request: the caller's
// tenant, and the privacy level of its data, as declared in the request's
// _meta (toolhub/data_level) or the tenant's, exactly as for tools/call.
func (s *Server) relayedCall(ctx context.Context, method string, params any, meta *mcp.Meta) (*hub.Call, error) {
	c := &hub.Call{Tenant: TenantFrom(ctx), Method: method, Params: params}
	if meta != nil {
		c.Meta = hub.ClientMeta(meta.AdditionalFields)
	}
	if err := s.dataLevelOf(c); err != nil {
		return nil, err
	}
	c.Meta = nil
	return c, nil
}

func (c *relayCompletion) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return c.complete(ctx, mcp.PromptReference{Type: "ref/prompt", Name: name}, arg, cc)
}

func (c *relayCompletion) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return c.complete(ctx, mcp.ResourceReference{Type: "ref/resource", URI: uri}, arg, cc)
}

// subscriptions are the clients' resource subscriptions, per endpoint
// ("" for /mcp, else the vendor of /mcp/vendors/{vendor}): a vendor's
// resource is subscribed upstream while any client is subscribed to it.
type subscriptions struct {
	mu   sync.Mutex
	subs map[subKey]map[string]*server.MCPServer // session id → its server
}

type subKey struct{ endpoint, vendor, uri string }

// users counts the sessions subscribed to a vendor's resource.
func (s *subscriptions) usersLocked(vendor, uri string) int {
	n := 0
	for k, ids := range s.subs {
		if k.vendor == vendor && k.uri == uri {
			n += len(ids)
		}
	}
	return n
}

func (f *mcpFront) subscribe(ctx context.Context, vendor, uri string, unsubscribe bool) {
	f.subscribeAs(ctx, vendor, vendor, uri, unsubscribe)
}

func (f *mcpFront) subscribeAs(ctx context.Context, endpoint, vendor, uri string, unsubscribe bool) {
	s := server.ClientSessionFromContext(ctx)
	if s == nil || f.s.opts.Relay == nil {
		return
	}
	k := subKey{endpoint, vendor, uri}
	f.subs.mu.Lock()
	if f.subs.subs == nil {
		f.subs.subs = map[subKey]map[string]*server.MCPServer{}
	}
	before := f.subs.usersLocked(vendor, uri)
	if unsubscribe {
		delete(f.subs.subs[k], s.SessionID())
		if len(f.subs.subs[k]) == 0 {
			delete(f.subs.subs, k)
		}
	} else {
		if f.subs.subs[k] == nil {
			f.subs.subs[k] = map[string]*server.MCPServer{}
		}
		f.subs.subs[k][s.SessionID()] = server.ServerFromContext(ctx)
	}
	after := f.subs.usersLocked(vendor, uri)
	f.subs.mu.Unlock()
	if (before == 0) != (after == 0) {
		// The client's request reaches the vendor through the gateway, as
		// resources/read does: its privacy gate (the URI is the caller's),
		// limits, metering.
		method := string(mcp.MethodResourcesSubscribe)
		if after == 0 {
			method = string(mcp.MethodResourcesUnsubscribe)
		}
		req := mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}
		call, err := f.s.relayedCall(ctx, method, req, nil)
		if err == nil {
			_, err = f.s.gw.Relay(ctx, vendor, call)
		}
		if err != nil {
			f.s.log.Warn("resource subscription not relayed", "vendor", vendor, "uri", uri, "error", err)
		}
	}
}

// dropSession ends a closed session's subscriptions on an endpoint.
func (f *mcpFront) dropSession(endpoint, id string) {
	type vu struct{ vendor, uri string }
	var gone []vu
	f.subs.mu.Lock()
	for k, ids := range f.subs.subs {
		if _, ok := ids[id]; k.endpoint != endpoint || !ok {
			continue
		}
		delete(ids, id)
		if len(ids) == 0 {
			delete(f.subs.subs, k)
		}
		if f.subs.usersLocked(k.vendor, k.uri) == 0 {
			gone = append(gone, vu{k.vendor, k.uri})
		}
	}
	f.subs.mu.Unlock()
	for _, g := range gone {
		if err := f.s.opts.Relay.Subscribe(context.Background(), g.vendor, g.uri, true); err != nil {
			f.s.log.Debug("resource unsubscription not relayed", "vendor", g.vendor, "uri", g.uri, "error", err)
		}
	}
}

// onEvent applies a vendor's notification for all its clients.
func (f *mcpFront) onEvent(e servers.Event) {
	params := eventParams(e.Notification)
	switch e.Notification.Method {
	case mcp.MethodNotificationResourcesListChanged, mcp.MethodNotificationPromptsListChanged:
		// mcp-go tells the clients of both endpoints.
		f.refreshSurface(e.Vendor)
		f.refreshAggregate()
	case mcp.MethodNotificationResourceUpdated:
		uri, _ := params["uri"].(string)
		f.subs.mu.Lock()
		own := maps.Clone(f.subs.subs[subKey{e.Vendor, e.Vendor, uri}])
		all := maps.Clone(f.subs.subs[subKey{"", e.Vendor, uri}])
		f.subs.mu.Unlock()
		for id, srv := range own {
			if srv != nil {
				_ = srv.SendNotificationToSpecificClient(id, e.Notification.Method, params)
			}
		}
		if len(all) > 0 {
			scoped := eventParams(e.Notification)
			scoped["uri"] = ScopedURI(e.Vendor, uri)
			for id, srv := range all {
				if srv != nil {
					_ = srv.SendNotificationToSpecificClient(id, e.Notification.Method, scoped)
				}
			}
		}
	case string(mcp.MethodNotificationMessage):
		for _, k := range f.keys(e.Vendor) {
			if srv := f.serverOf(k); srv != nil {
				srv.SendNotificationToAllClients(e.Notification.Method, params)
			}
		}
	}
}

func eventParams(n mcp.JSONRPCNotification) map[string]any {
	out := map[string]any{}
	for k, v := range n.Params.AdditionalFields {
		out[k] = v
	}
	if n.Params.Meta != nil {
		out["_meta"] = n.Params.Meta
	}
	return out
}

// mcpPeer is an MCP client session of the front door, as the vendor
// connection of a call sees it ([hub.Peer]).
type mcpPeer struct {
	srv *server.MCPServer
	ctx context.Context // the client's request: its session and stream
	cs  *callStream     // the request's answer; nil on stdio
}

var _ hub.Peer = (*mcpPeer)(nil)

func (p *mcpPeer) Declared(method string) bool {
	s, ok := server.ClientSessionFromContext(p.ctx).(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	caps := s.GetClientCapabilities()
	switch mcp.MCPMethod(method) {
	case mcp.MethodSamplingCreateMessage:
		return caps.Sampling != nil
	case mcp.MethodElicitationCreate:
		return caps.Elicitation != nil
	case mcp.MethodListRoots:
		return caps.Roots != nil
	}
	return false
}

// reqCtx is the client's request context, ended also when ctx (the
// vendor's request) ends.
func (p *mcpPeer) reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancel(p.ctx)
	stop := context.AfterFunc(ctx, cancel)
	return rctx, func() { stop(); cancel() }
}

func (p *mcpPeer) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return ask(ctx, p, mcp.MethodSamplingCreateMessage, req.CreateMessageParams, func(rctx context.Context) (*mcp.CreateMessageResult, error) {
		//lint:ignore SA1019 relayed for clients and vendors on revisions before 2026-07-28
		return p.srv.RequestSampling(rctx, req)
	})
}

func (p *mcpPeer) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return ask(ctx, p, mcp.MethodElicitationCreate, req.Params, func(rctx context.Context) (*mcp.ElicitationResult, error) {
		return p.srv.RequestElicitation(rctx, req)
	})
}

func (p *mcpPeer) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return ask(ctx, p, mcp.MethodListRoots, nil, func(rctx context.Context) (*mcp.ListRootsResult, error) {
		return p.srv.RequestRoots(rctx, req)
	})
}

// ask sends a vendor's request (ctx) of method to p's client with send, on
// the client's request context, and returns the client's answer; when
// toolhub gives up on the answer first, the client is told (see
// [mcpPeer.abandon]).
func ask[R any](ctx context.Context, p *mcpPeer, method mcp.MCPMethod, params any, send func(rctx context.Context) (R, error)) (R, error) {
	rctx, cancel := p.reqCtx(ctx)
	defer cancel()
	w := p.expect(method, params)
	defer p.abandon(ctx, rctx, w)
	return send(rctx)
}

// expect notes a request about to be sent to p's session, to learn the id
// mcp-go gives it on the wire.
func (p *mcpPeer) expect(method mcp.MCPMethod, params any) *sentWait {
	s := server.ClientSessionFromContext(p.ctx)
	if s == nil {
		return nil
	}
	return sent.expect(s.SessionID(), string(method), params)
}

// abandon runs when a relayed request ends: when it ended because toolhub
// no longer wants the answer (the vendor cancelled its request, or the
// vendor's call ended) while the client's call goes on, the client is sent
// notifications/cancelled for it, as MCP asks of a requester that gives up.
func (p *mcpPeer) abandon(ctx, rctx context.Context, w *sentWait) {
	if w == nil {
		return
	}
	id, ok := sent.done(w)
	if !ok || rctx.Err() == nil || p.ctx.Err() != nil {
		return
	}
	reason := "toolhub no longer needs the answer: the vendor's call ended"
	if cause := context.Cause(ctx); errors.Is(cause, servers.ErrVendorCancelled) {
		reason = cause.Error()
	}
	// On the call's stream, ahead of its result; and once more to the
	// session when the call's request ends, in case the call's answer was
	// already written. A client ignores the cancellation of a request it
	// no longer has.
	params := map[string]any{"requestId": id, "reason": reason}
	_ = p.Notify(string(mcp.MethodNotificationCancelled), params)
	if s := server.ClientSessionFromContext(p.ctx); s != nil {
		session, srv := s.SessionID(), p.srv
		context.AfterFunc(p.ctx, func() {
			_ = srv.SendNotificationToSpecificClient(session, string(mcp.MethodNotificationCancelled), params)
		})
	}
}

// sent learns the ids of the requests mcp-go's streamable HTTP server
// writes to clients for relayed requests (mcp-go numbers them and does not
// tell): [watchStream] reads them off the client's stream. Session ids are
// unique in the process, so one log serves every front-door server.
var sent sentRequests

type sentRequests struct {
	mu   sync.Mutex
	wait map[string][]*sentWait // session id → relayed requests not yet done
}

// sentWait is one relayed request: its method and params as mcp-go
// writes them, and the id it was written with, once seen.
type sentWait struct {
	session, method string
	params          []byte
	id              json.RawMessage
}

func (s *sentRequests) expect(session, method string, params any) *sentWait {
	w := &sentWait{session: session, method: method}
	if params != nil {
		w.params, _ = json.Marshal(params)
	}
	s.mu.Lock()
	if s.wait == nil {
		s.wait = map[string][]*sentWait{}
	}
	s.wait[session] = append(s.wait[session], w)
	s.mu.Unlock()
	return w
}

// done forgets w and returns the id it was written with, if it was.
func (s *sentRequests) done(w *sentWait) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.wait[w.session]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(s.wait, w.session)
	} else {
		s.wait[w.session] = ws
	}
	return w.id, w.id != nil
}

func (s *sentRequests) watched(session string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.wait[session]) > 0
}

// saw notes a message written to session's stream: a request matching a
// relayed one (method and params) not yet seen gets its id.
func (s *sentRequests) saw(session string, msg []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.ID == nil || m.Method == "" {
		return
	}
	var params bytes.Buffer
	if len(m.Params) > 0 && json.Compact(&params, m.Params) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.wait[session] {
		if w.id == nil && w.method == m.Method && bytes.Equal(w.params, params.Bytes()) {
			w.id = m.ID
			return
		}
	}
}

// watchStream returns w, watching the server-sent events of a client's
// standalone stream (GET) for the requests relayed to it.
func watchStream(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	id := r.Header.Get(server.HeaderKeySessionID)
	if r.Method != http.MethodGet || id == "" {
		return w
	}
	return &streamWatcher{ResponseWriter: w, session: id}
}

type streamWatcher struct {
	http.ResponseWriter
	session string
	buf     []byte // the event being written
}

// Write notes the requests in the events before they reach the client, so
// their ids are known before the client can answer.
func (w *streamWatcher) Write(b []byte) (int, error) {
	if !sent.watched(w.session) {
		w.buf = w.buf[:0]
		return w.ResponseWriter.Write(b)
	}
	w.buf = append(w.buf, b...)
	for {
		i := bytes.Index(w.buf, []byte("\n\n"))
		if i < 0 {
			break
		}
		for _, line := range bytes.Split(w.buf[:i], []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				sent.saw(w.session, bytes.TrimSpace(data))
			}
		}
		w.buf = w.buf[i+2:]
	}
	return w.ResponseWriter.Write(b)
}

func (w *streamWatcher) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *streamWatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (p *mcpPeer) Notify(method string, params map[string]any) error {
	sess := server.ClientSessionFromContext(p.ctx)
	if logFiltered(sess, method, params) {
		return nil
	}
	if p.cs == nil {
		// Not a POST toolhub wraps (stdio): mcp-go's queue.
		return p.srv.SendNotificationToClient(p.ctx, method, params)
	}
	if sess == nil || !sess.Initialized() {
		return server.ErrNotificationNotInitialized
	}
	b, err := notificationJSON(method, params)
	if err != nil {
		return err
	}
	upgradeSession(p.ctx)
	return p.cs.q.push(b)
}

// end runs when the call's handler returns: the notifications queued for
// the call go out before mcp-go writes the result.
func (p *mcpPeer) end() {
	if p.cs != nil {
		p.cs.q.close(p.ctx)
	}
}
