package servers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/vendorconn"
	"github.com/toolhub/toolhub/registry"
)

// failureThreshold is how many connection failures in a row (calls or
// health probes) make the manager give a connection up and reconnect.
const failureThreshold = 3

// ackWait bounds the wait for a subscriptions/listen acknowledgement at
// connect.
const ackWait = 2 * time.Second

// conn is one live connection to a vendor: an initialized mcp-go client
// and, for stdio, the process behind it.
type conn struct {
	v      *vendor
	client *client.Client
	proc   *proc // stdio only

	ctx    context.Context // the connection's lifetime
	cancel context.CancelFunc

	protocol string
	server   mcp.Implementation
	caps     mcp.ServerCapabilities
	since    time.Time

	lost     chan struct{}
	lostOnce sync.Once
	lostErr  error

	acked   chan struct{} // closed at the first subscriptions/acknowledged
	ackOnce atomic.Bool

	fails atomic.Int32 // connection failures in a row
	gate  gate         // in-flight calls
	relay relayState   // the MCP callers of calls in flight (relay.go)
	fast  *fastPath    // tools/call without mcp-go's client (fast.go); nil: none

	releaseHTTP func() // HTTP and SSE: lets go of the vendor's idle connections
}

// markLost records that the connection is gone; the supervisor reconnects.
func (c *conn) markLost(err error) {
	c.lostOnce.Do(func() {
		if err == nil {
			err = errConnLost
		}
		c.lostErr = err
		close(c.lost)
	})
}

// dial connects to the vendor, initializes the session and lists its
// tools. It returns a ready connection or an error; it never leaves
// anything running behind an error.
func (v *vendor) dial(ctx context.Context) (_ *conn, err error) {
	spec := v.spec.MCP
	o := &v.m.opts
	// The connection outlives ctx (a stopped vendor's connection may still
	// drain its calls); ctx ends it only while dialling.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &conn{v: v, ctx: cctx, cancel: cancel, lost: make(chan struct{})}
	stopAbort := context.AfterFunc(ctx, cancel)
	defer func() {
		stopAbort()
		if err != nil {
			c.close()
		}
	}()

	d, err := v.newTransport(c)
	if err != nil {
		return nil, err
	}
	c.newClient(d.tr, o.ProtocolVersion)
	// Start gets the connection's lifetime: the SSE transport ties its
	// event stream to it. Its wait for the endpoint is bounded by
	// WithEndpointTimeout.
	startCtx := d.startCtx
	if startCtx == nil {
		startCtx = cctx
	}
	if err := c.client.Start(startCtx); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}

	ictx, icancel := context.WithTimeout(cctx, o.ConnectTimeout)
	defer icancel()
	if err := v.initialize(ctx, ictx, c); err != nil {
		return nil, err
	}
	listChanged := c.caps.Tools != nil && c.caps.Tools.ListChanged ||
		c.caps.Resources != nil && (c.caps.Resources.ListChanged || c.caps.Resources.Subscribe) ||
		c.caps.Prompts != nil && c.caps.Prompts.ListChanged

	// Over streamable HTTP a legacy (pre-2026-07-28) server pushes
	// notifications only on the standalone GET stream, which mcp-go opens
	// only when asked before it connects, and asking rules out the modern
	// protocol. So a legacy HTTP server that announces tool-list changes
	// is dialled again, with the stream, and remembered as such.
	if spec.Transport == registry.TransportHTTP && listChanged && !mcp.IsModernProtocol(c.protocol) && !v.legacyListen.Load() {
		v.legacyListen.Store(true)
		c.close()
		return v.dial(ctx)
	}
	// From 2026-07-28 on, notifications are opt-in: hold a
	// subscriptions/listen stream open for tool-list changes. Waiting for
	// its acknowledgement before listing means no change falls between the
	// list and the subscription.
	if listChanged && mcp.IsModernProtocol(c.protocol) {
		c.awaitListen(ictx)
	}

	if d.streamer != nil && !o.NoFastPath {
		c.fast = newFastPath(c, d.fastClient, d.fastBase, d.fastURL, d.fastHdrs, d.streamer, d.htap)
	}

	sctx, scancel := context.WithTimeout(cctx, o.ToolSyncTimeout)
	defer scancel()
	if err := v.syncTools(sctx, c); err != nil {
		return nil, err
	}
	if err := v.syncSurface(sctx, c); err != nil {
		// Tools work without them: say so and go on.
		v.log.Warn("listing resources and prompts failed", "error", errText(err, v.red))
	}
	c.since = v.m.opts.Now()
	return c, nil
}

// newClient makes c's MCP client on tr, asking for protocol (if not "").
// toolhub declares sampling, elicitation and roots to the vendor and
// relays such requests to the MCP client of the call (relay.go).
func (c *conn) newClient(tr transport.Interface, protocol string) {
	var copts []client.ClientOption
	if protocol != "" {
		copts = append(copts, client.WithProtocolVersion(protocol))
	}
	copts = append(copts, client.WithSamplingHandler(relayHandler{c}),
		client.WithElicitationHandler(relayHandler{c}), client.WithRootsHandler(relayHandler{c}))
	c.client = client.NewClient(tr, copts...)
	c.client.OnNotification(c.onNotification)
	c.client.OnConnectionLost(func(err error) { c.markLost(fmt.Errorf("event stream ended: %w", err)) })
}

// awaitListen opens c's subscriptions/listen stream and waits (at most
// ackWait, or until ctx ends) for its acknowledgement.
func (c *conn) awaitListen(ctx context.Context) {
	c.acked = make(chan struct{})
	go c.listen()
	t := time.NewTimer(ackWait)
	defer t.Stop()
	select {
	case <-c.acked:
	case <-t.C:
		c.v.log.Debug("no subscriptions/listen acknowledgement; listing tools anyway")
	case <-ctx.Done():
	}
}

// dialed is the transport a dial made, and what the fast path needs of a
// streamable HTTP one.
type dialed struct {
	tr         transport.Interface
	fastURL    string
	fastHdrs   map[string]string
	fastClient *http.Client
	fastBase   *http.Transport
	streamer   *transport.StreamableHTTP
	htap       *httpTap
	// startCtx is what the client is started with: the SSE transport's
	// event stream is guarded with it (listguard.go); nil means c.ctx.
	startCtx context.Context
}

// newTransport makes c's transport as the vendor's spec says: a started
// stdio process, or a streamable HTTP or SSE client.
func (v *vendor) newTransport(c *conn) (dialed, error) {
	switch t := v.spec.MCP.Transport; t {
	case registry.TransportStdio:
		return v.stdioTransport(c)
	case registry.TransportHTTP, registry.TransportSSE:
		return v.httpTransport(c)
	default:
		return dialed{}, fmt.Errorf("transport %q is unknown", t)
	}
}

// stdioTransport starts the vendor's process; c is lost when it exits.
func (v *vendor) stdioTransport(c *conn) (dialed, error) {
	spec, o := v.spec.MCP, &v.m.opts
	env, err := v.stdioEnv()
	if err != nil {
		return dialed{}, err
	}
	maxLine := 0
	if o.MaxResponseBytes > 0 {
		maxLine = int(min(o.MaxResponseBytes, int64(^uint(0)>>1)))
	}
	lists := &listIDs{}
	p, t, err := startProc(spec.Command, spec.Args, env, spec.Dir, v.log, v.red, maxLine, lists)
	if err != nil {
		return dialed{}, err
	}
	c.proc = p
	go func() {
		select {
		case <-p.exited:
			c.markLost(p.exitError())
		case <-c.ctx.Done():
		}
	}()
	return dialed{tr: &tap{Interface: t, lists: lists}}, nil
}

// httpTransport is a streamable HTTP or SSE client of the vendor's URL,
// with its headers (${VAR}s expanded) on the vendor's own pool.
func (v *vendor) httpTransport(c *conn) (dialed, error) {
	spec, o := v.spec.MCP, &v.m.opts
	u, err := v.red.Expand(spec.URL, o.LookupEnv)
	if err != nil {
		return dialed{}, fmt.Errorf("url: %w", err)
	}
	headers := make(map[string]string, len(spec.Headers))
	for k, val := range spec.Headers {
		if headers[k], err = v.red.Expand(val, o.LookupEnv); err != nil {
			return dialed{}, fmt.Errorf("header %s: %w", k, err)
		}
	}
	hc, release, base := v.m.vendorClient(headers, v.spec.Limits.Concurrency)
	c.releaseHTTP = release
	if spec.Transport == registry.TransportHTTP {
		opts := []transport.StreamableHTTPCOption{
			transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(headers),
			transport.WithHTTPLogger(v.log),
		}
		if v.legacyListen.Load() {
			//lint:ignore SA1019 only for a legacy (pre-2026-07-28) server, which pushes notifications on the standalone GET stream alone (see dial)
			opts = append(opts, transport.WithContinuousListening())
		}
		t, err := transport.NewStreamableHTTP(u, opts...)
		if err != nil {
			return dialed{}, err
		}
		htap := &httpTap{tap: tap{Interface: t}}
		return dialed{tr: htap, streamer: t, fastURL: u, fastHdrs: headers, fastClient: hc, fastBase: base, htap: htap}, nil
	}
	t, err := transport.NewSSE(u,
		transport.WithHTTPClient(hc),
		transport.WithHeaders(headers),
		transport.WithSSELogger(v.log),
		transport.WithEndpointTimeout(o.ConnectTimeout),
		// Calls are bounded by their context; this only backs it up.
		transport.WithResponseTimeout(time.Hour),
	)
	if err != nil {
		return dialed{}, err
	}
	lists := &listIDs{}
	maxLine := int(^uint(0) >> 1)
	if o.MaxResponseBytes > 0 {
		maxLine = int(min(o.MaxResponseBytes, int64(maxLine)))
	}
	startCtx := context.WithValue(c.ctx, listStreamKey{}, &listStream{lists: lists, max: maxLine, log: v.log})
	return dialed{tr: &httpTap{tap: tap{Interface: t, lists: lists}}, startCtx: startCtx}, nil
}

// initialize runs the MCP handshake on c (bounded by ictx; ctx is the
// dial's) and keeps what the server said of itself, bounded.
func (v *vendor) initialize(ctx, ictx context.Context, c *conn) error {
	o := &v.m.opts
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = o.ClientInfo
	init.Params.ProtocolVersion = o.ProtocolVersion
	rec := &record{}
	res, err := c.client.Initialize(withRecord(ictx, rec), init)
	if err != nil {
		if c.proc != nil {
			// A process that died says why on its way out.
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-c.proc.exited:
				t.Stop()
				return fmt.Errorf("initialize: %w", c.proc.exitError())
			case <-t.C:
			}
		}
		if cerr := ictx.Err(); cerr != nil && ctx.Err() == nil {
			return fmt.Errorf("initialize: no answer within %v", o.ConnectTimeout)
		}
		return wrapMsg("initialize", classify(ictx, v.id, err, rec, v.red))
	}
	c.protocol = c.client.ProtocolVersion()
	c.server = res.ServerInfo
	// What the vendor calls itself is shown in status and logs: bounded.
	c.server.Name = truncate(c.server.Name, registry.MaxVendorMessageBytes/4)
	c.server.Version = truncate(c.server.Version, registry.MaxVendorMessageBytes/4)
	c.caps = res.Capabilities
	return nil
}

// close ends the connection at once: in-flight calls fail.
func (c *conn) close() {
	c.cancel()
	if c.client != nil {
		_ = c.client.Close()
	}
	if c.proc != nil {
		c.proc.stop()
	}
	if c.releaseHTTP != nil {
		c.releaseHTTP()
	}
	if c.fast != nil {
		c.fast.close()
	}
}

// onNotification runs on the transport's reader: it must not block.
func (c *conn) onNotification(n mcp.JSONRPCNotification) {
	switch n.Method {
	case mcp.MethodNotificationToolsListChanged:
		c.v.listChanges.Add(1)
		c.v.kick(c.v.resync)
	case mcp.MethodNotificationSubscriptionsAcknowledged:
		if c.acked != nil && c.ackOnce.CompareAndSwap(false, true) {
			close(c.acked) // the first: dial lists tools next
			return
		}
		// A reopened stream may have missed a change meanwhile.
		c.v.kick(c.v.resync)
		c.v.kick(c.v.resurface)
	default:
		c.relayNotification(n)
	}
}

// listen holds a subscriptions/listen stream open for the life of the
// connection, reopening it when the vendor ends it.
func (c *conn) listen() {
	b := c.v.m.opts.RestartBackoff
	filter := mcp.SubscriptionFilter{ToolsListChanged: true,
		ResourcesListChanged: c.caps.Resources != nil && c.caps.Resources.ListChanged,
		PromptsListChanged:   c.caps.Prompts != nil && c.caps.Prompts.ListChanged}
	for n := 0; ; n++ {
		start := c.v.m.opts.Now()
		err := c.client.Listen(c.ctx, filter)
		if c.ctx.Err() != nil {
			return
		}
		if c.v.m.opts.Now().Sub(start) > b.Max {
			n = 0
		}
		// The stream ended: the vendor restarted or something cut it. A
		// probe tells a dead vendor from a closed stream.
		c.v.log.Debug("subscriptions/listen ended; probing the vendor", "error", errText(err, c.v.red))
		c.v.kick(c.v.probeNow)
		t := time.NewTimer(b.Delay(n))
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
	}
}

// probe checks the connection is alive with a request the vendor must
// answer: server/discover on the stateless protocol (2026-07-28 on, where
// ping no longer exists and mcp-go's Client.Ping returns nil without
// sending anything), ping before it. TestDefaultProbeReachesVendor counts
// the requests at the vendor.
func (c *conn) probe(ctx context.Context) error {
	if mcp.IsModernProtocol(c.protocol) {
		_, err := c.client.Discover(ctx, mcp.DiscoverRequest{})
		return err
	}
	//lint:ignore SA1019 only on a legacy connection, where Ping sends a real ping request (the no-op modern case is handled above)
	return c.client.Ping(ctx)
}

// observe counts connection failures in a row; any answer resets the
// count. It reports whether the connection was just given up.
func (c *conn) observe(e *hub.Error) bool {
	switch {
	case e == nil:
		c.fails.Store(0)
		return false
	case e.Code == hub.CodeTimeout || e.Code == hub.CodeCanceled:
		return false // says nothing either way: tools may be slow
	case !isConnFailure(e):
		c.fails.Store(0) // the vendor answered
		return false
	}
	if c.fails.Add(1) >= failureThreshold {
		c.markLost(fmt.Errorf("%d connection failures in a row, last: %w", failureThreshold, e))
		return true
	}
	c.v.kick(c.v.probeNow)
	return false
}

// isConnFailure reports whether a classified error says the connection is
// broken (as opposed to the vendor answering badly).
func isConnFailure(e *hub.Error) bool {
	if e.Code != hub.CodeUnavailable {
		return false
	}
	var se *StatusError
	if errors.As(e, &se) {
		return false // the vendor answered, with an HTTP error
	}
	return true
}

// call runs one tools/call on the connection: over the fast path when the
// tool takes it, else through mcp-go's client.
func (c *conn) call(ctx context.Context, call *hub.Call) (*hub.Result, error) {
	if call.Method != "" {
		return c.relayCall(ctx, call)
	}
	if !c.gate.enter() {
		return nil, c.v.draining()
	}
	defer c.gate.leave()
	peer := hub.PeerFrom(ctx)
	if peer != nil {
		defer c.relay.leave(c.relay.enter(peer))
	}
	req := callRequest(ctx, call)
	if m := req.Params.Meta; m != nil && m.ProgressToken != nil && peer != nil {
		// The vendor's progress goes back to this caller: give the vendor
		// a token unique on the connection and map it back.
		tok := c.relay.track(peer, m.ProgressToken)
		defer c.relay.untrack(tok)
		m.ProgressToken = tok
	}
	var ft *fastTool
	if c.fast != nil {
		if ft = c.fast.tool(req.Params.Name, call.Tool.Def.InputSchema); !c.fast.takes(ft) {
			ft = nil
		}
	}
	in, err := c.inputAnswers(call, ft)
	if err != nil {
		return nil, err
	}
	rec := &record{maxBytes: c.v.m.opts.MaxResponseBytes}
	var out *hub.Result
	if ft != nil {
		var done bool
		if out, done, err = c.fastCall(ctx, rec, call, ft, &req, in, peer != nil); done {
			return out, err
		}
	} else {
		out, err = c.slowCall(ctx, rec, &req)
	}
	if err != nil {
		return nil, c.failed(ctx, err, rec)
	}
	c.observe(nil)
	if out == nil {
		return nil, &hub.Error{Code: hub.CodeUpstream, Vendor: c.v.id, Message: fmt.Sprintf("vendor %q returned no result", c.v.id)}
	}
	if err := repeatedKeys(c.v.id, call.Tool.Def.Name, out.Raw); err != nil {
		return nil, err
	}
	return out, nil
}

// callRequest is the tools/call request of a call, with the caller's
// _meta the vendor may see and the trace's.
func callRequest(ctx context.Context, call *hub.Call) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = call.Tool.Def.Name
	if call.Arguments != nil {
		req.Params.Arguments = call.Arguments
	} else {
		req.Params.Arguments = map[string]any{}
	}
	req.Params.Meta = traceMeta(ctx, vendorMeta(call.Meta))
	return req
}

// inputAnswers checks and decodes the answers a call carries to a
// multi round trip (mrtr.go): nil when it carries none.
func (c *conn) inputAnswers(call *hub.Call, ft *fastTool) (*hub.InputResponses, error) {
	if call.Input == nil {
		return nil, nil
	}
	switch {
	case !mcp.IsModernProtocol(c.protocol):
		return nil, &hub.Error{Code: hub.CodeInvalidArguments, Vendor: c.v.id,
			Message: fmt.Sprintf("tool %q: inputResponses answer a 2026-07-28 multi round trip, and toolhub speaks %s to vendor %q: it asked for no input", call.Tool.Def.Name, c.protocol, c.v.id)}
	case ft == nil:
		return nil, &hub.Error{Code: hub.CodeUnavailable, Vendor: c.v.id,
			Message: fmt.Sprintf("tool %q: toolhub relays the answers of a multi round trip to vendor %q only over streamable HTTP, without a log level set and x-mcp-header parameters", call.Tool.Def.Name, c.v.id)}
	}
	return inputResponses(c.v.id, call.Tool.Def.Name, call.Input)
}

// fastCall sends the call over the fast path. done says the call is over
// with what it returns (a multi round trip's input requests, or its
// error): otherwise out and err go through call's checks.
func (c *conn) fastCall(ctx context.Context, rec *record, call *hub.Call, ft *fastTool, req *mcp.CallToolRequest, in *hub.InputResponses, hasPeer bool) (out *hub.Result, done bool, err error) {
	raw, err := c.fast.call(ctx, rec, ft, req.Params.Arguments, req.Params.Meta, in)
	switch {
	case err == nil && c.fast.modern && needsInput(raw):
		// A multi round trip: the vendor's input requests go to the
		// MCP client of the call, which calls again with its answers.
		if !hasPeer {
			return nil, true, &hub.Error{Code: hub.CodeUpstream, Vendor: c.v.id,
				Message: fmt.Sprintf("vendor %q: tool %q asked for input (sampling, elicitation or roots), which only an MCP client can give", c.v.id, call.Tool.Def.Name)}
		}
		if out, err = inputRequired(c.v.id, call.Tool.Def.Name, raw); err != nil {
			return nil, true, err
		}
		c.observe(nil)
		return out, true, nil
	case err == nil:
		out, err = decodeResult(raw)
	}
	return out, false, err
}

// slowCall sends the call through mcp-go's client. The tap keeps the
// result's bytes as they came (a stdio line's result, an SSE or HTTP
// response's): they become Raw.
func (c *conn) slowCall(ctx context.Context, rec *record, req *mcp.CallToolRequest) (*hub.Result, error) {
	rec.wantRaw = true
	res, err := c.client.CallTool(withRecord(ctx, rec), *req)
	if err != nil || res == nil {
		return nil, err
	}
	// mcp-go decodes structuredContent with encoding/json into any (and
	// keeps the bytes in RawStructuredContent): the same value a decode of
	// the raw bytes would give, so it is used as is.
	out := &hub.Result{Content: res.Content, Structured: res.StructuredContent, IsError: res.IsError, Final: markedFinal(res.IsError, res.Meta)}
	if raw := rec.snapshot().raw; len(raw) > 0 {
		out.Raw = ownMeta(raw, res.Meta)
	}
	return out, nil
}

// failed is the error a failed call returns, classified; a lost session
// marks the connection lost, and a vendor that no longer knows the tool
// (invalid params, method not found) has its list checked.
func (c *conn) failed(ctx context.Context, err error, rec *record) error {
	e := classify(ctx, c.v.id, err, rec, c.v.red)
	if errors.Is(err, transport.ErrSessionTerminated) {
		c.markLost(e)
	}
	c.observe(e)
	if e.Code == hub.CodeUpstream {
		if d := rec.snapshot().rpcErr; d != nil && (d.Code == mcp.INVALID_PARAMS || d.Code == mcp.METHOD_NOT_FOUND) {
			// Perhaps the tool is gone: check the list.
			c.v.kick(c.v.resync)
		}
	}
	return e
}

// gate counts in-flight calls and lets a retiring connection wait for them.
type gate struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{}
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

func (g *gate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// drain refuses new calls and returns a channel closed once none is in flight.
func (g *gate) drain() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	ch := make(chan struct{})
	if g.n == 0 {
		close(ch)
	} else if g.idle == nil {
		g.idle = ch
	} else {
		ch = g.idle
	}
	return ch
}

// rejected turns SetVendorTools errors into status entries, sorted by tool.
func rejected(errs []error) []RejectedTool {
	out := make([]RejectedTool, 0, len(errs))
	for _, err := range errs {
		var te *registry.ToolError
		if errors.As(err, &te) {
			out = append(out, RejectedTool{Tool: te.Tool, Part: te.Part, Error: te.Err.Error()})
			continue
		}
		out = append(out, RejectedTool{Error: err.Error()})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// wrapMsg prefixes a classified error's message, keeping the error in the
// chain (errors.As still finds the *hub.Error and its cause).
func wrapMsg(prefix string, e *hub.Error) error {
	return &redactedError{msg: prefix + ": " + e.Message, err: e}
}

func errText(err error, red *vendorconn.Redactor) string {
	if err == nil {
		return ""
	}
	return red.Redact(err.Error())
}
