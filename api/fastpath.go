package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/x/jsonscan"
)

// The fast path answers the hot MCP requests — tools/call and tools/list
// on a session mcp-go made — without mcp-go's server: the envelope is
// decoded once, the arguments once (for the schema check and the call),
// the same governed call runs, and the answer is written as mcp-go would
// write it. A vendor result's own bytes (hub.Result.Raw) go out as they
// came, with _meta["toolhub/provenance"] spliced in, instead of being
// re-encoded.
//
// Everything else goes to mcp-go, and so does any tools/call or
// tools/list the fast path cannot answer exactly as mcp-go would:
//
//   - a legacy request without a session mcp-go registered on this
//     server (the Mcp-Session-Id of an initialize answered here), or
//     with an unsupported Mcp-Protocol-Version header;
//   - a 2026-07-28 request mcp-go would refuse (versions of header and
//     _meta differ, no client capabilities, standard headers that do not
//     match the body, a Last-Event-ID), a tool with x-mcp-header
//     parameters, or a tools/list (its cache hints stay mcp-go's);
//   - a session whose client declared sampling, elicitation or roots
//     (the vendor's server→client requests need mcp-go's session
//     machinery);
//   - a call with a progress token, a task, or multi round-trip params;
//     a list with a cursor;
//   - a client that accepts only text/event-stream;
//   - a request id that is not a string or a number.
//
// Notifications a vendor sends while a fast call runs (log messages) turn
// the answer into a server-sent event stream, as with mcp-go.
//
// One difference stays: mcp-go answers every request of a session that
// once received a notification as a server-sent event stream; the fast
// path answers application/json unless the call itself sends one. Both are
// what the streamable HTTP transport allows a client to get. Notifications
// not about the call (list changes) wait in the session's queue for its
// GET stream or its next request mcp-go answers, instead of riding on a
// tools/call answer.
//
// Whoever changes the MCP servers keeps this in step: mcp-go hooks and
// tool middleware for tools/call or tools/list (none are registered),
// mcp-go's session idle TTL (the fast path does not touch mcp-go's
// sessions; toolhub's own idle expiry, sessions.go, runs in guard before
// it) or pagination would not be seen here.

// fastState is what the fast path knows of one MCP server: the sessions
// mcp-go registered on it, its tool filter and its calls in flight.
type fastState struct {
	srv    *server.MCPServer
	vendor string
	filter server.ToolFilterFunc
	// serverInfo is the server's implementation as 2026-07-28 results
	// carry it in _meta.
	impl       mcp.Implementation
	serverInfo []byte
	sessions   sync.Map // session id → server.ClientSession
	inflight   sync.Map // inflightKey → *inflightCall
}

// inflightCall is a tools/call in flight that notifications/cancelled can
// end.
type inflightCall struct{ cancel context.CancelFunc }

// inflightKey names a caller's request: its credential (role and key id,
// or an OAuth token's subject), its MCP session (none on 2026-07-28) and
// the request id as responseID gives it. A request id is the client's
// own: two clients of one tenant may use the same one, and one must not
// cancel the other's call (mcp-go finds a sessionless call by its id
// alone within the tenant's server).
func inflightKey(r *http.Request, id []byte) string {
	p := PrincipalFrom(r.Context())
	return p.Role + "\x00" + p.KeyID + "\x00" + r.Header.Get(server.HeaderKeySessionID) + "\x00" + string(id)
}

// trackCall makes ctx the context of a call that notifications/cancelled
// from the same caller with the same request id ends; done forgets it.
func (fs *fastState) trackCall(ctx context.Context, r *http.Request, id []byte) (_ context.Context, done func()) {
	ctx, cancel := context.WithCancel(ctx)
	e, key := &inflightCall{cancel: cancel}, inflightKey(r, id)
	fs.inflight.Store(key, e)
	return ctx, func() {
		fs.inflight.CompareAndDelete(key, e)
		cancel()
	}
}

// cancelCall ends the caller's call with request id, if it is in flight.
func (fs *fastState) cancelCall(r *http.Request, id []byte) {
	if v, ok := fs.inflight.Load(inflightKey(r, id)); ok {
		v.(*inflightCall).cancel()
	}
}

// sessionless handles what a request without an MCP session (protocol
// 2026-07-28) needs scoped to its caller, whether the fast path or mcp-go
// answers it: a tools/call is tracked under inflightKey (the returned
// request carries the tracked context; done forgets it), and
// notifications/cancelled is answered here (202, as mcp-go answers a
// notification), ending only the caller's own call: mcp-go would end any
// call of the tenant with that request id.
func (fs *fastState) sessionless(w http.ResponseWriter, r *http.Request, body []byte) (_ *http.Request, done func(), answered bool) {
	done = func() {}
	if r.Header.Get(server.HeaderKeySessionID) != "" {
		return r, done, false
	}
	call := bytes.Contains(body, methodToolsCall)
	if !call && !bytes.Contains(body, methodCancelled) {
		return r, done, false
	}
	env, ok := scanEnvelope(body)
	if !ok && json.Unmarshal(body, &env) != nil {
		return r, done, false
	}
	switch {
	case env.Method == "tools/call" && len(env.ID) > 0:
		if id, ok := responseID(env.ID); ok {
			ctx, done := fs.trackCall(r.Context(), r, id)
			return r.WithContext(ctx), done, false
		}
	case env.Method == string(mcp.MethodNotificationCancelled) && len(env.ID) == 0:
		if id, ok := responseID(env.Params.RequestID); ok {
			fs.cancelCall(r, id)
		}
		w.WriteHeader(http.StatusAccepted)
		return r, done, true
	}
	return r, done, false
}

// track keeps fs's sessions as mcp-go registers and unregisters them.
func (fs *fastState) track(srv *server.MCPServer) {
	h := srv.GetHooks()
	if h == nil {
		h = &server.Hooks{}
		server.WithHooks(h)(srv)
	}
	h.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) {
		fs.sessions.Store(s.SessionID(), s)
	})
	h.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		fs.sessions.Delete(s.SessionID())
	})
}

// decorate stamps a 2026-07-28 result as mcp-go's decorateResponse does:
// resultType and the server's info.
func (fs *fastState) decorate(q fastRequest, r *mcp.CallToolResult) *mcp.CallToolResult {
	if q.modern {
		if r.ResultType == "" {
			r.SetResultType(mcp.ResultTypeComplete)
		}
		if m := r.EnsureResultMeta(); m.ServerInfo() == nil {
			m.SetServerInfo(fs.impl)
		}
	}
	return r
}

// fastEnvelope is a JSON-RPC message as the fast path reads it: one
// decode, with what it does not need left as bytes.
type fastEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  fastParams      `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// fastParams are the params of tools/call, tools/list and
// notifications/cancelled. A repeated "params" key replaces the whole
// object, as precheck reads it; mcp-go merges them (a later params
// without arguments keeps the earlier arguments), so such a message is
// left to mcp-go.
type fastParams struct {
	Name           string          `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
	Meta           json.RawMessage `json:"_meta"`
	Task           json.RawMessage `json:"task"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   json.RawMessage `json:"requestState"`
	Cursor         json.RawMessage `json:"cursor"`
	RequestID      json.RawMessage `json:"requestId"`

	seen, repeated bool // params came more than once: left to mcp-go
}

func (p *fastParams) UnmarshalJSON(b []byte) error {
	type plain fastParams
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	seen := p.seen
	*p = fastParams(v)
	p.seen, p.repeated = true, seen
	return nil
}

// The members of fastEnvelope and fastParams that scanEnvelope reads.
const (
	envJSONRPC = iota
	envID
	envMethod
	envParams
	envResult
	envError
)

var envelopeFields = []string{envJSONRPC: "jsonrpc", envID: "id", envMethod: "method", envParams: "params", envResult: "result", envError: "error"}

const (
	parName = iota
	parArguments
	parMeta
	parTask
	parInputResponses
	parRequestState
	parCursor
	parRequestID
)

var paramsFields = []string{parName: "name", parArguments: "arguments", parMeta: "_meta", parTask: "task",
	parInputResponses: "inputResponses", parRequestState: "requestState", parCursor: "cursor", parRequestID: "requestId"}

// scanEnvelope reads body as json.Unmarshal reads it into a fastEnvelope,
// in one pass without reflection. It reports false, leaving body to
// encoding/json, for an invalid message and wherever the two could
// differ (see jsonscan.Fields; also params that are not an object, a
// string with escapes). Raw members are body's own bytes.
func scanEnvelope(body []byte) (fastEnvelope, bool) {
	var env fastEnvelope
	ok := jsonscan.Fields(body, envelopeFields, func(field int, v []byte) bool {
		switch field {
		case envJSONRPC, envMethod:
			s, ok := jsonscan.String(v)
			if !ok {
				return false
			}
			if field == envJSONRPC {
				env.JSONRPC = known(s, mcp.JSONRPC_VERSION)
			} else {
				env.Method = known(s, "tools/call", "tools/list", "notifications/cancelled")
			}
		case envID:
			env.ID = v
		case envParams:
			return scanParams(v, &env.Params)
		case envResult:
			env.Result = v
		case envError:
			env.Error = v
		}
		return true
	})
	return env, ok
}

// known returns s as a string, without allocating when it is one of
// names.
func known(s []byte, names ...string) string {
	for _, n := range names {
		if string(s) == n {
			return n
		}
	}
	return string(s)
}

// scanParams reads params as fastParams.UnmarshalJSON does, for
// scanEnvelope.
func scanParams(params []byte, p *fastParams) bool {
	p.seen = true
	raw := [...]*json.RawMessage{parArguments: &p.Arguments, parMeta: &p.Meta, parTask: &p.Task,
		parInputResponses: &p.InputResponses, parRequestState: &p.RequestState, parCursor: &p.Cursor, parRequestID: &p.RequestID}
	return jsonscan.Fields(params, paramsFields, func(field int, v []byte) bool {
		if field != parName {
			*raw[field] = v
			return true
		}
		s, ok := jsonscan.String(v)
		p.Name = string(s)
		return ok
	})
}

var (
	methodToolsCall = []byte(`tools/call`)
	methodToolsList = []byte(`tools/list`)
	methodCancelled = []byte(`notifications/cancelled`)
)

// fast handles a POST body on the fast path: it answers protocol-level
// errors of a tools/call (as precheck does) and the requests it can
// answer as mcp-go would, and reports whether it answered. When it did
// not, mcp-go gets the request.
func (f *mcpFront) fast(w http.ResponseWriter, r *http.Request, fs *fastState, body []byte) bool {
	tenant := TenantFrom(r.Context())
	call := bytes.Contains(body, methodToolsCall)
	if !call && !bytes.Contains(body, methodToolsList) && !bytes.Contains(body, methodCancelled) {
		return false
	}
	env, ok := scanEnvelope(body)
	if !ok && json.Unmarshal(body, &env) != nil {
		// Not one decodable message: precheck gives the same answers as
		// before, mcp-go the rest.
		if call {
			if resp := f.precheck(fs.vendor, tenant, body); resp != nil {
				writeRPC(w, resp)
				return true
			}
		}
		return false
	}
	switch env.Method {
	case "tools/call":
		if len(env.ID) == 0 {
			return false // a notification: mcp-go ignores it
		}
		c, resp := f.precheckCall(fs.vendor, tenant, env.ID, env.Params.Name, env.Params.Arguments)
		if resp != nil {
			writeRPC(w, resp)
			return true
		}
		if c == nil {
			return false // search_tools
		}
		p := &env.Params
		if len(p.Task) > 0 || len(p.InputResponses) > 0 || len(p.RequestState) > 0 {
			return false
		}
		t := fs.srv.GetTool(p.Name)
		if t == nil {
			return false
		}
		q, ok := f.fastEligible(r, fs, &env)
		if !ok || q.meta != nil && q.meta.ProgressToken != nil {
			return false
		}
		if q.modern {
			// 2026-07-28: the standard headers must match the body, and
			// parameters mirrored in headers (x-mcp-header) are left to
			// mcp-go.
			if !standardHeadersMatch(r, p.Name) || bytes.Contains(t.Tool.RawInputSchema, []byte("x-mcp-header")) {
				return false
			}
		}
		f.serveCall(w, r, fs, q, c)
		return true
	case "tools/list":
		if len(env.ID) == 0 || len(env.Params.Cursor) > 0 {
			return false
		}
		q, ok := f.fastEligible(r, fs, &env)
		if !ok || q.modern {
			return false // 2026-07-28 lists carry cache hints: left to mcp-go
		}
		f.serveList(w, r, fs, q.id, q.sess)
		return true
	case string(mcp.MethodNotificationCancelled):
		if len(env.ID) == 0 {
			// A fast call's cancel is ours; mcp-go still sees the
			// notification (it cancels its own calls).
			if id, ok := responseID(env.Params.RequestID); ok {
				fs.cancelCall(r, id)
			}
		}
	}
	return false
}

// standardHeadersMatch reports whether a 2026-07-28 tools/call of the tool
// name carries the standard headers mcp.ValidateStandardHeaders requires
// (Mcp-Method, and Mcp-Name naming the same tool), without decoding the
// params again.
func standardHeadersMatch(r *http.Request, name string) bool {
	if r.Header.Get(mcp.HeaderMethod) != string(mcp.MethodToolsCall) {
		return false
	}
	h := r.Header.Get(mcp.HeaderName)
	if h == "" {
		return false
	}
	decoded, ok := mcp.DecodeHeaderValue(h)
	return ok && decoded == name
}

// fastRequest is a request the fast path answers.
type fastRequest struct {
	id     []byte               // the id to echo
	sess   server.ClientSession // the legacy session; nil for 2026-07-28
	meta   *mcp.Meta            // the request's _meta, or nil
	modern bool                 // protocol revision 2026-07-28 or later
}

// fastEligible reports whether a request is one mcp-go would answer as a
// plain request — of a legacy session it registered, or a stateless
// 2026-07-28 request that passes its checks — so that it can be answered
// here.
func (f *mcpFront) fastEligible(r *http.Request, fs *fastState, env *fastEnvelope) (fastRequest, bool) {
	var q fastRequest
	if f.s.opts.DisableFastPath || env.JSONRPC != mcp.JSONRPC_VERSION || len(env.Result) > 0 || len(env.Error) > 0 || env.Params.repeated {
		return q, false
	}
	if a := r.Header.Get("Accept"); a != "" && !strings.Contains(a, "application/json") && !strings.Contains(a, "*/*") {
		return q, false
	}
	var ok bool
	if q.id, ok = responseID(env.ID); !ok {
		return q, false
	}
	if m := bytes.TrimSpace(env.Params.Meta); len(m) > 0 && !bytes.Equal(m, []byte("null")) {
		q.meta = &mcp.Meta{}
		if json.Unmarshal(m, q.meta) != nil {
			return q, false
		}
	}
	hv, mv := r.Header.Get(mcp.HeaderProtocolVersion), q.meta.ProtocolVersion()
	var caps *mcp.ClientCapabilities
	if mcp.IsModernProtocol(hv) || mcp.IsModernProtocol(mv) {
		// As mcp-go's validateModernRequest and HandleMessage check it.
		if hv != mv || !mcp.IsValidProtocolVersion(mv) || r.Header.Get(mcp.HeaderLastEventID) != "" {
			return q, false
		}
		if caps = q.meta.ClientCapabilities(); caps == nil {
			return q, false
		}
		q.modern = true
	} else {
		if hv != "" && !mcp.IsValidProtocolVersion(hv) {
			return q, false
		}
		sid := r.Header.Get(server.HeaderKeySessionID)
		if sid == "" {
			return q, false
		}
		v, ok := fs.sessions.Load(sid)
		if !ok {
			return q, false
		}
		q.sess = v.(server.ClientSession)
		if ci, ok := q.sess.(server.SessionWithClientInfo); ok {
			c := ci.GetClientCapabilities()
			caps = &c
		}
	}
	if caps != nil && (caps.Sampling != nil || caps.Elicitation != nil || caps.Roots != nil) {
		return q, false
	}
	return q, true
}

// responseID returns a request id as mcp-go echoes it (it decodes the id
// into an interface: a number comes back as a float64), or false for an
// id that is not a string or a number.
func responseID(raw json.RawMessage) ([]byte, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	if plainID(raw) {
		return raw, true
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	switch v.(type) {
	case string, float64:
		b, err := json.Marshal(v)
		return b, err == nil
	}
	return nil, false
}

// plainID reports an id encoding/json would write back byte for byte: a
// short integer, or a string of printable ASCII without escapes or the
// characters it escapes for HTML.
func plainID(raw []byte) bool {
	if raw[0] == '"' {
		if len(raw) < 2 || raw[len(raw)-1] != '"' {
			return false
		}
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' && len(digits) > 1 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// serveCall runs a tools/call through the gateway and answers it, as the
// MCP server's tool handler (handler) and mcp-go would.
func (f *mcpFront) serveCall(w http.ResponseWriter, r *http.Request, fs *fastState, q fastRequest, c *hub.Call) {
	f.fastServed.Add(1)
	id := q.id
	out := newFastOut(w, q.sess)
	defer func() {
		if p := recover(); p != nil {
			// As mcp-go's recovery middleware answers a panicking handler.
			out.finish(rpcResponse(id, nil, fmt.Errorf("panic recovered in %s tool handler: %v", c.Name, p)))
		}
	}()
	ctx := withTenant(r.Context(), TenantFrom(r.Context()))
	if q.sess != nil {
		// (A sessionless call is tracked by the guard: sessionless.)
		ctx = fs.srv.WithContext(ctx, q.sess)
		var done func()
		ctx, done = fs.trackCall(ctx, r, id)
		defer done()
	}
	ctx = hub.WithPeer(ctx, out)

	c.Meta = callMeta(q.meta)
	var res *hub.Result
	err := f.s.dataLevelOf(c)
	if err == nil {
		res, err = f.s.gw.Call(ctx, c)
	}
	out.q.close(ctx) // the call's notifications go before its result
	buf := getBuf()
	defer putBuf(buf)
	*buf = append(*buf, `{"jsonrpc":"2.0","id":`...)
	*buf = append(*buf, id...)
	*buf = append(*buf, `,"result":`...)
	var b []byte
	if err == nil && res.Input != nil && !q.modern {
		// mcp-go would send the vendor's requests to the session, and it
		// declared none of sampling, elicitation and roots (fastEligible).
		err = &hub.Error{Code: hub.CodeUpstream, Vendor: res.Provenance.Vendor,
			Message: "the vendor asked for input (sampling, elicitation or roots), and this client declared none of those capabilities"}
	}
	switch {
	case err != nil:
		b, err = json.Marshal(fs.decorate(q, errorResult(err, c.ID)))
	case res.Raw != nil:
		var ok bool
		if *buf, ok = fs.spliceRaw(*buf, q, res); ok {
			break
		}
		fallthrough
	default:
		b, err = json.Marshal(fs.decorate(q, mcpResult(res)))
	}
	if err != nil {
		out.finish(rpcResponse(id, nil, err))
		return
	}
	*buf = append(*buf, b...)
	*buf = append(*buf, '}')
	out.finish(*buf)
}

// serveList answers tools/list as mcp-go does: the server's tools sorted
// by name, through the tool filter, no pagination.
func (f *mcpFront) serveList(w http.ResponseWriter, r *http.Request, fs *fastState, id []byte, sess server.ClientSession) {
	f.fastServed.Add(1)
	ctx := fs.srv.WithContext(withTenant(r.Context(), TenantFrom(r.Context())), sess)
	all := fs.srv.ListTools()
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	tools := make([]mcp.Tool, 0, len(names))
	for _, n := range names {
		tools = append(tools, all[n].Tool)
	}
	tools = fs.filter(ctx, tools)
	if tools == nil {
		tools = []mcp.Tool{}
	}
	out := newFastOut(w, sess)
	b, err := json.Marshal(mcp.ListToolsResult{Tools: tools})
	if err != nil {
		out.finish(rpcResponse(id, nil, err))
		return
	}
	out.finish(rpcResponse(id, b, nil))
}

// rpcResponse is a JSON-RPC response with result, or an internal error
// as mcp-go answers one.
func rpcResponse(id, result []byte, err error) []byte {
	if err != nil {
		b, _ := json.Marshal(mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(json.RawMessage(id)),
			Error: mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: err.Error()}})
		return b
	}
	b := make([]byte, 0, len(id)+len(result)+32)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// spliceRaw appends the vendor's result object res.Raw as mcp-go would
// answer its decoded form: _meta holding only toolhub's provenance (and,
// for 2026-07-28, the server's info), then content, isError (when true),
// resultType (2026-07-28) and structuredContent (when not null), in that
// order (mcp-go writes them from a map); other members are dropped as
// mcp-go's decoding drops them. It reports false, appending nothing, when
// Raw is not such an object or the result carries findings.
func (fs *fastState) spliceRaw(buf []byte, q fastRequest, res *hub.Result) ([]byte, bool) {
	raw := res.Raw
	if len(res.Findings) > 0 || !utf8.Valid(raw) {
		// A marked result is rare: mcpResult writes its findings.
		return buf, false
	}
	var content, structured []byte
	isError := false
	ok := jsonscan.Object(raw, func(key, v []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		switch string(key) {
		case "content":
			if v[0] != '[' {
				return false
			}
			content = v
		case "structuredContent":
			if !bytes.Equal(v, []byte("null")) {
				structured = v
			}
		case "isError":
			var ok bool
			if isError, ok = jsonscan.Bool(v); !ok {
				return false
			}
		}
		return true
	})
	if !ok || content == nil || isError != res.IsError {
		return buf, false
	}
	start := len(buf)
	buf = append(buf, `{"_meta":{`...)
	if q.modern {
		buf = append(buf, `"`+mcp.MetaKeyServerInfo+`":`...)
		buf = append(buf, fs.serverInfo...)
		buf = append(buf, ',')
	}
	buf = append(buf, `"`+MetaProvenance+`":`...)
	if buf, ok = res.Provenance.AppendJSON(buf); !ok {
		prov, err := json.Marshal(res.Provenance)
		if err != nil {
			return buf[:start], false
		}
		buf = append(buf, prov...)
	}
	if res.IsError && res.Final {
		buf = append(buf, `,"`+hub.MetaFinal+`":true`...)
	}
	buf = append(buf, `},"content":`...)
	buf = append(buf, content...)
	if isError {
		buf = append(buf, `,"isError":true`...)
	}
	if q.modern {
		buf = append(buf, `,"resultType":"`+string(mcp.ResultTypeComplete)+`"`...)
	}
	if structured != nil {
		buf = append(buf, `,"structuredContent":`...)
		buf = append(buf, structured...)
	}
	return append(buf, '}'), true
}

// fastOut writes a fast answer: one application/json body, or — once a
// notification of the call goes out — a server-sent event stream ending
// with the response, as mcp-go's streamable HTTP server writes it. It is
// the call's hub.Peer; its notifications wait in a queue (callstream.go)
// so that a slow client does not stall the vendor.
type fastOut struct {
	w    http.ResponseWriter
	sess server.ClientSession // nil for 2026-07-28
	q    noteQueue
	mu   sync.Mutex
	sse  bool // the answer is an event stream
	done bool // the response is written: later notifications are dropped
}

func newFastOut(w http.ResponseWriter, sess server.ClientSession) *fastOut {
	o := &fastOut{w: w, sess: sess}
	o.q.write = o.writeNote
	return o
}

var _ hub.Peer = (*fastOut)(nil)

var errNotDeclared = errors.New("toolhub: the MCP client did not declare this capability")

// Declared is false: the fast path serves only clients that declared
// none of sampling, elicitation and roots.
func (o *fastOut) Declared(string) bool { return false }

func (o *fastOut) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, errNotDeclared
}

func (o *fastOut) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, errNotDeclared
}

func (o *fastOut) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return nil, errNotDeclared
}

// Notify writes a notification of the call to its stream, as mcpPeer and
// mcp-go's request stream do (the session's log level applies).
func (o *fastOut) Notify(method string, params map[string]any) error {
	if logFiltered(o.sess, method, params) {
		return nil
	}
	if o.sess != nil && !o.sess.Initialized() {
		return server.ErrNotificationNotInitialized
	}
	if _, ok := o.w.(http.Flusher); !ok {
		return nil // as mcp-go: a writer that cannot stream drops them
	}
	b, err := notificationJSON(method, params)
	if err != nil {
		return err
	}
	return o.q.push(b)
}

// writeNote writes a queued notification, unless the answer is done.
func (o *fastOut) writeNote(b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.done {
		o.event(b)
	}
}

// event writes one server-sent event, upgrading the answer first.
func (o *fastOut) event(b []byte) {
	if !o.sse {
		startEventStream(o.w)
		o.sse = true
	}
	writeEvent(o.w, b)
}

// finish writes the response.
func (o *fastOut) finish(resp []byte) {
	o.q.shut()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return
	}
	o.done = true
	if o.sse {
		o.event(resp)
		return
	}
	o.w.Header().Set("Content-Type", "application/json")
	o.w.WriteHeader(http.StatusOK)
	buf := getBuf()
	defer putBuf(buf)
	*buf = append(append(*buf, resp...), '\n')
	_, _ = o.w.Write(*buf)
}

func writeRPC(w http.ResponseWriter, resp []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
}

// bufs are the fast path's answer buffers.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func getBuf() *[]byte { return bufs.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 1<<20 {
		return // let a huge one go
	}
	*b = (*b)[:0]
	bufs.Put(b)
}
