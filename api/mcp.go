package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/servers"
)

// Meta keys toolhub adds to MCP results.
const (
	MetaProvenance = "toolhub/provenance"
	// MetaFindings marks a result whose text the vendor's result scan
	// flagged: a list of {field, rule, span}. The result is not changed.
	MetaFindings = "toolhub/findings"
	MetaError    = "toolhub/error"
)

// mcpFront serves the catalog over MCP: for each tenant, one server for
// the whole catalog and one virtual server per vendor (its tools under
// their own names). Tool lists follow the catalog: a change is applied
// with SetTools, which sends notifications/tools/list_changed to the
// server's clients — only to the servers of tenants whose view of the
// catalog changed (see tenantfront.go), so a vendor's changes reach no
// tenant that cannot see its tools.
type mcpFront struct {
	s *Server

	mu      sync.Mutex
	servers map[frontKey]*frontServer
	https   map[*server.MCPServer]http.Handler
	fasts   map[*server.MCPServer]*fastState
	// fastServed counts the requests the fast path answered.
	fastServed atomic.Int64

	subs subscriptions // clients' resource subscriptions (relay.go)

	sessions *sessionTable // MCP sessions: caps and idle expiry (sessions.go)

	changes  chan frontMsg
	stop     func()
	stopRel  func()
	done     chan struct{}
	overflow atomic.Bool
}

func newMCPFront(s *Server) *mcpFront {
	f := &mcpFront{s: s, servers: map[frontKey]*frontServer{}, https: map[*server.MCPServer]http.Handler{},
		fasts:   map[*server.MCPServer]*fastState{},
		changes: make(chan frontMsg, 64), done: make(chan struct{}), sessions: newSessionTable(s.opts.Sessions)}
	f.sessions.start()
	f.stopRel = func() {}
	if s.opts.Relay != nil {
		f.stopRel = s.opts.Relay.OnEvent(f.onEvent)
	}
	f.stop = s.cat.Subscribe(func(c registry.Change) {
		select {
		case f.changes <- frontMsg{vendor: c.Vendor}:
		default:
			// The queue is full: remember to refresh everything once.
			f.overflow.Store(true)
		}
	})
	go f.follow()
	return f
}

// frontMsg is a unit of work for follow: a vendor to refresh ("" for
// capabilities only), a barrier to close when done, or the end.
type frontMsg struct {
	vendor  string
	barrier chan struct{}
	end     bool
}

// follow applies catalog changes to the MCP servers, off the catalog
// writer's path.
func (f *mcpFront) follow() {
	defer close(f.done)
	for m := range f.changes {
		switch {
		case m.end:
			return
		case m.barrier != nil:
			close(m.barrier)
			continue
		}
		f.refreshAll()
		if f.overflow.Swap(false) {
			for _, v := range f.s.cat.Vendors() {
				f.refreshVendor(v)
			}
		}
		if m.vendor != "" {
			f.refreshVendor(m.vendor)
		}
	}
}

func (f *mcpFront) close() {
	f.stop()
	f.stopRel()
	f.changes <- frontMsg{end: true}
	<-f.done
	f.sessions.close()
}

// newServer makes the MCP server of vendor ("" for the whole catalog),
// with its fast path's state; f.mu is held.
func (f *mcpFront) newServer(vendor, name string) *server.MCPServer {
	filter := f.toolFilter(vendor)
	opts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithToolFilter(filter),
		server.WithRecovery(),
		server.WithInstructions("toolhub: governed third-party tools. Results carry _meta[\"toolhub/provenance\"]; errors carry _meta[\"toolhub/error\"] with a stable code."),
	}
	if vendor != "" {
		opts = append(opts, f.relayOptions(vendor)...)
	} else if f.s.opts.Relay != nil {
		opts = append(opts, f.aggregateOptions()...)
	}
	if f.s.opts.Relay != nil {
		opts = append(opts, server.WithElicitation())
	}
	srv := server.NewMCPServer(name, f.s.opts.Version, opts...)
	if f.s.opts.Relay != nil {
		srv.EnableSampling() // vendors' sampling requests are relayed
	}
	fs := &fastState{srv: srv, vendor: vendor, filter: filter, impl: mcp.Implementation{Name: name, Version: f.s.opts.Version}}
	fs.serverInfo, _ = json.Marshal(fs.impl)
	fs.track(srv)
	f.sessions.sessionHooks(srv)
	f.fasts[srv] = fs
	return srv
}

// fastOf returns the fast path's state of srv; f.mu is held.
func (f *mcpFront) fastOf(srv *server.MCPServer) *fastState { return f.fasts[srv] }

// toolFilter is the tool filter of vendor's MCP servers ("" for the whole
// catalog): the tools the request's tenant may call.
func (f *mcpFront) toolFilter(vendor string) server.ToolFilterFunc {
	return func(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
		tenant := TenantFrom(ctx)
		out := tools[:0:0]
		// mcp-go runs the filter for tools/list with every tool, and
		// before a tools/call with the one tool called: a capability's
		// dotted alias is callable but not listed (it always comes with
		// its function-calling name, so a list is never just an alias).
		listing := len(tools) > 1
		for _, t := range tools {
			if vendor == "" && listing && isCapabilityAlias(t.Name) {
				continue // listed once, by its function-calling name
			}
			if listing && f.deferred(vendor, t.Name) {
				continue // behind search_tools (toolsearch.go)
			}
			if _, ok := f.resolve(vendor, tenant, t.Name); ok {
				out = append(out, t)
			}
		}
		return out
	}
}

// resolve maps a tool name as a client of this server sees it to a catalog
// name the tenant may call. vendor "" is the whole catalog.
func (f *mcpFront) resolve(vendor, tenant, name string) (string, bool) {
	if f.isSearchTool(vendor, name) {
		return name, true
	}
	if vendor != "" {
		t, ok := f.s.cat.VendorTool(vendor, name)
		if !ok {
			return "", false
		}
		name = t.Catalog
	}
	e, ok := f.s.gw.Lookup(tenant, name)
	if !ok {
		return "", false
	}
	return e.Name, true
}

// isCapabilityAlias reports whether name is a capability's dotted name
// ("weather.current"), served besides its function-calling name
// ("weather_current") but not listed. Catalog names have no dots.
func isCapabilityAlias(name string) bool { return strings.Contains(name, ".") }

func (f *mcpFront) httpHandler(srv *server.MCPServer, vendor string) http.Handler {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.https[srv]
	if !ok {
		h = f.guard(f.fastOf(srv), server.NewStreamableHTTPServer(srv,
			server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
				return withTenant(ctx, TenantFrom(r.Context()))
			}),
			server.WithHeartbeatInterval(f.s.opts.Heartbeat),
			server.WithStreamableHTTPLogger(f.s.log),
		))
		f.https[srv] = h
	}
	return h
}

// mcpTool renders a catalog entry as an MCP tool named name.
func mcpTool(name string, e registry.Entry) mcp.Tool {
	if c := e.Capability; c != nil {
		t := mcp.NewToolWithRawSchema(name, c.Description, c.InputSchema)
		t.Title = c.Name
		if len(c.OutputSchema) > 0 {
			t.RawOutputSchema = c.OutputSchema
		}
		return t
	}
	d := e.Tool.Def
	t := mcp.NewToolWithRawSchema(name, d.Description, d.InputSchema)
	t.Title = d.Title
	if len(d.OutputSchema) > 0 {
		t.RawOutputSchema = d.OutputSchema
	}
	if len(d.Annotations) > 0 {
		_ = json.Unmarshal(d.Annotations, &t.Annotations)
	}
	return t
}

// handler runs a tools/call through the gateway. Gateway errors come back
// as tool errors (isError) carrying the typed error in _meta, so the model
// can read them and the orchestrator can act on the code.
func (f *mcpFront) handler(catalogName string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := &hub.Call{Tenant: TenantFrom(ctx), Name: catalogName, Meta: callMeta(req.Params.Meta)}
		if m := req.Params.Meta; m != nil && m.ProgressToken != nil {
			if c.Meta == nil {
				c.Meta = map[string]any{}
			}
			c.Meta["progressToken"] = m.ProgressToken
		}
		if srv := server.ServerFromContext(ctx); srv != nil && server.ClientSessionFromContext(ctx) != nil {
			// The vendor's notifications and requests during the call
			// come back to this client (relay.go).
			p := &mcpPeer{srv: srv, ctx: ctx, cs: callStreamFrom(ctx)}
			ctx = hub.WithPeer(ctx, p)
			defer p.end()
		}
		if err := f.s.dataLevelOf(c); err != nil {
			return errorResult(err, ""), nil
		}
		if rt := req.Params.MultiRoundTripParams; len(rt.InputResponses) > 0 || rt.RequestState != "" {
			in, err := inputResponsesOf(rt)
			if err != nil {
				return errorResult(err, ""), nil
			}
			c.Input = in
		}
		if req.Params.Arguments != nil {
			args, ok := req.Params.Arguments.(map[string]any)
			if !ok {
				return errorResult(&hub.Error{Code: hub.CodeInvalidArguments, Message: "arguments must be a JSON object"}, ""), nil
			}
			c.Arguments = args
		}
		res, err := f.s.gw.Call(ctx, c)
		if err != nil {
			return errorResult(err, c.ID), nil
		}
		return mcpResult(res), nil
	}
}

// dataLevelOf sets the privacy level of a call from its _meta (the
// tenant's default when it declares none).
func (s *Server) dataLevelOf(c *hub.Call) error {
	var declared *int
	if v, ok := c.Meta[MetaDataLevel].(float64); ok {
		l := int(v)
		if float64(l) != v {
			l = -1
		}
		declared = &l
	}
	var err error
	c.DataLevel, err = s.dataLevel(c.Tenant, declared)
	return err
}

func callMeta(m *mcp.Meta) map[string]any {
	if m == nil || len(m.AdditionalFields) == 0 {
		return nil
	}
	return hub.ClientMeta(m.AdditionalFields)
}

func mcpResult(r *hub.Result) *mcp.CallToolResult {
	if in := r.Input; in != nil {
		// A vendor's multi round trip (2026-07-28): a client of that
		// revision gets the requests and calls again with its answers;
		// for an older one mcp-go sends them as server→client requests
		// and calls the handler again with the answers.
		var reqs mcp.InputRequests
		if err := json.Unmarshal(in.Requests, &reqs); err != nil {
			return errorResult(&hub.Error{Code: hub.CodeUpstream, Vendor: r.Provenance.Vendor, Message: fmt.Sprintf("the vendor's inputRequests cannot be relayed: %v", err)}, "")
		}
		out := &mcp.CallToolResult{Content: []mcp.Content{}}
		out.SetResultType(mcp.ResultTypeInputRequired)
		out.InputRequests, out.RequestState = reqs, in.State
		out.Meta = &mcp.Meta{AdditionalFields: map[string]any{MetaProvenance: r.Provenance}}
		return out
	}
	content := r.Content
	if content == nil {
		content = []mcp.Content{}
	}
	out := &mcp.CallToolResult{Content: content, StructuredContent: r.Structured, IsError: r.IsError}
	out.Meta = &mcp.Meta{AdditionalFields: map[string]any{MetaProvenance: r.Provenance}}
	if len(r.Findings) > 0 {
		out.Meta.AdditionalFields[MetaFindings] = r.Findings
	}
	if r.IsError && r.Final {
		// The vendor's definitive answer: a client need not retry it.
		out.Meta.AdditionalFields[hub.MetaFinal] = true
	}
	return out
}

// inputResponsesOf is a retry's multi round-trip params as the gateway
// takes them (the vendor connection checks them against the requestState:
// servers/mrtr.go).
func inputResponsesOf(rt mcp.MultiRoundTripParams) (*hub.InputResponses, error) {
	in := &hub.InputResponses{State: rt.RequestState}
	if len(rt.InputResponses) > servers.MaxInputRequests {
		return nil, &hub.Error{Code: hub.CodeInvalidArguments, Message: fmt.Sprintf("%d inputResponses (toolhub relays at most %d)", len(rt.InputResponses), servers.MaxInputRequests)}
	}
	if len(rt.InputResponses) > 0 {
		b, err := json.Marshal(rt.InputResponses)
		if err != nil {
			return nil, &hub.Error{Code: hub.CodeInvalidArguments, Message: fmt.Sprintf("inputResponses: %v", err)}
		}
		in.Responses = b
	}
	return in, nil
}

func errorResult(err error, callID string) *mcp.CallToolResult {
	b := errorBody(err, callID)
	out := mcp.NewToolResultError(fmt.Sprintf("%s: %s", b.Code, b.Message))
	out.Meta = &mcp.Meta{AdditionalFields: map[string]any{MetaError: b}}
	return out
}

// guard bounds the request body and answers protocol-level errors of a
// tools/call (unknown tool, arguments that fail the schema) as JSON-RPC
// -32602 errors carrying the schema issues, before the MCP server runs.
//
// With the fast path on (fastpath.go), tools/call and tools/list are
// answered here when they can be exactly as mcp-go would answer them.
func (f *mcpFront) guard(fs *fastState, next http.Handler) http.Handler {
	vendor := fs.vendor
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A session in use is not idle; one ended for idleness is 404.
		if sid := r.Header.Get(server.HeaderKeySessionID); sid != "" && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			leave, expired := f.sessions.enter(sid)
			if expired {
				expiredSession(w, f.sessions.opts.IdleTimeout)
				return
			}
			defer leave()
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(watchStream(w, r), r) // relay.go
			return
		}
		body, err := requestBody(r, f.s.opts.MaxBodyBytes)
		if err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, errTooLarge) {
				status = http.StatusRequestEntityTooLarge
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(rpcError(nil, rpcInvalidRequest, err))
			return
		}
		// An initialize makes a session (whatever Mcp-Session-Id it
		// carries): it needs room under the caps.
		if id, ok := initializeID(body); ok {
			res, err := f.sessions.reserve(sessionKey(r.Context()), next)
			if err != nil {
				refuseSession(w, id, err)
				return
			}
			defer res.done()
			r = r.WithContext(context.WithValue(r.Context(), reservationKey{}, res))
		}
		r, done, answered := fs.sessionless(w, r, body)
		defer done()
		if answered {
			return
		}
		if !f.s.opts.DisableFastPath {
			if f.fast(w, r, fs, body) {
				return
			}
		} else if resp := f.precheck(vendor, TenantFrom(r.Context()), body); resp != nil {
			writeRPC(w, resp)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, methodToolsCall) {
			next.ServeHTTP(w, r)
			return
		}
		// The call's notifications go on its answer (callstream.go).
		cs, r := newCallStream(w, r)
		next.ServeHTTP(cs, r)
		cs.finish()
	})
}

var errTooLarge = errors.New("request body is too large")

// MaxJSONDepth bounds the nesting of a request body.
const MaxJSONDepth = 64

// requestBody returns r's body: the bytes readBody kept, or at most limit
// bytes read (readLimited).
func requestBody(r *http.Request, limit int64) ([]byte, error) {
	if rb, ok := r.Body.(*readBodyBytes); ok {
		if b, ok := rb.unread(); ok && int64(len(b)) <= limit {
			return b, nil
		}
	}
	return readLimited(r.Body, limit)
}

// readLimited reads at most limit bytes of body.
func readLimited(body io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, &hub.Error{Code: hub.CodeInvalidRequest, Message: "reading the request body: " + err.Error()}
	}
	if int64(len(b)) > limit {
		return nil, &hub.Error{Code: hub.CodeTooLarge, Message: fmt.Sprintf("request body is over the %d-byte limit", limit), Err: errTooLarge}
	}
	if d := registry.JSONDepth(b); d > MaxJSONDepth {
		return nil, &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf("request body nests %d levels deep, over the limit of %d", d, MaxJSONDepth)}
	}
	return b, nil
}

// precheck returns a JSON-RPC error response for a tools/call that cannot
// run, or nil to let the MCP server handle the message.
func (f *mcpFront) precheck(vendor, tenant string, body []byte) []byte {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || !bytes.Contains(body, []byte(`"tools/call"`)) {
		return nil
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" || len(msg.ID) == 0 {
		return nil // the MCP server answers parse errors and notifications
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		p.Name = ""
	}
	_, resp := f.precheckCall(vendor, tenant, msg.ID, p.Name, p.Arguments)
	return resp
}

// precheckCall checks a tools/call of the tool a client calls name with
// the raw arguments: it returns the call of the catalog name with the
// decoded arguments, checked by [hub.Gateway.PrecheckCall] (so the gateway
// does not validate them again), or the JSON-RPC error response for id.
func (f *mcpFront) precheckCall(vendor, tenant string, id json.RawMessage, name string, rawArgs json.RawMessage) (*hub.Call, []byte) {
	if name == "" {
		return nil, rpcError(id, rpcInvalidParams, &hub.Error{Code: hub.CodeInvalidRequest, Message: "tools/call params must be an object with a tool name and arguments"})
	}
	if f.isSearchTool(vendor, name) {
		return nil, nil // not a catalog tool: mcp-go runs it
	}
	catalogName, ok := f.resolve(vendor, tenant, name)
	if !ok {
		return nil, rpcError(id, rpcInvalidParams, &hub.Error{Code: hub.CodeUnknownTool, Message: fmt.Sprintf("unknown tool %q; list the tools with tools/list", name)})
	}
	var args map[string]any
	if a := bytes.TrimSpace(rawArgs); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		if a[0] != '{' || json.Unmarshal(a, &args) != nil {
			return nil, rpcError(id, rpcInvalidParams, &hub.Error{Code: hub.CodeInvalidArguments, Message: "arguments must be a JSON object"})
		}
	}
	c := &hub.Call{Tenant: tenant, Name: catalogName, Arguments: args}
	if err := f.s.gw.PrecheckCall(c); err != nil {
		return nil, rpcError(id, rpcCode(hub.CodeOf(err)), err)
	}
	return c, nil
}

// ServeStdio serves the whole catalog over stdio (one client, as tenant),
// with the same protocol-level checks as the HTTP front door.
func (s *Server) ServeStdio(ctx context.Context, tenant string, in io.Reader, out io.Writer) error {
	ctx = withTenant(ctx, tenant)
	lw := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), int(s.opts.MaxBodyBytes)+1)
		for sc.Scan() {
			line := sc.Bytes()
			if resp := s.mcp.precheck("", tenant, line); resp != nil {
				_, _ = lw.Write(append(resp, '\n'))
				continue
			}
			if _, err := pw.Write(append(append([]byte(nil), line...), '\n')); err != nil {
				return
			}
		}
		if err := sc.Err(); err != nil {
			_, _ = lw.Write(append(rpcError(nil, rpcInvalidRequest, &hub.Error{Code: hub.CodeTooLarge, Message: "message over the size limit; closing"}), '\n'))
			pw.CloseWithError(err)
			return
		}
		pw.Close()
	}()
	err := server.NewStdioServer(s.mcp.server("", tenant)).Listen(ctx, pr, lw)
	if err != nil && (errors.Is(err, io.EOF) || strings.Contains(err.Error(), "EOF")) {
		return nil
	}
	return err
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
