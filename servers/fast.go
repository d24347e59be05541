package servers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/x/jsonscan"
)

// The fast path sends tools/call to a streamable HTTP vendor itself, on
// the session mcp-go opened, instead of through mcp-go's client:
//
//   - the request is built in a pooled buffer from bytes made once per
//     connection (the headers: Content-Type, Accept, Mcp-Session-Id,
//     Mcp-Protocol-Version and the vendor's own headers) and once per tool
//     (the JSON-RPC envelope up to the arguments); only the arguments and
//     the _meta are encoded per call;
//   - it goes out on the fast path's own HTTP/1.1 connections (h1Pool:
//     written and read on the calling goroutine, dialled with the
//     manager's Transport's dialer and settings), or, where that pool
//     cannot be used, on the manager's HTTP client; either way the status
//     and Retry-After of the answer are recorded as recordingTransport
//     records them, so errors are classified exactly as on mcp-go's path;
//   - the answer is read once: application/json → the result object;
//     text/event-stream → events in order, where notifications (progress,
//     log messages) go to the connection's notification handler and
//     server→client requests (sampling, elicitation, roots, ping) to the
//     client's request handler, whose answer is POSTed back on the
//     session, as mcp-go's transport does; a stream the vendor ends before
//     the response, after an event id, is resumed with Last-Event-ID;
//   - the result object's bytes become hub.Result.Raw, and Content,
//     Structured and IsError are decoded from them in one pass with a
//     typed decoder (decodeResult).
//
// On a 2026-07-28 connection (not toolhub's default upstream revision, see
// [DefaultProtocolVersion], but one it may be pinned to) there is no
// session; the request carries the protocol version, client info and
// capabilities in its _meta, taken once from the server/discover mcp-go
// sent, and the Mcp-Method and Mcp-Name headers, made once per tool.
//
// mcp-go keeps everything else: initialize, the session, the GET stream,
// notifications outside calls, every other method, stdio and SSE vendors.
// Calls take mcp-go's path when the fast path cannot make them exactly as
// mcp-go would:
//
//   - a tool whose input schema has x-mcp-header annotations on a
//     2026-07-28 connection (its arguments are mirrored into headers);
//   - on a 2026-07-28 connection once a log level was set (it travels in
//     every request's _meta, and mcp-go keeps it);
//   - a connection whose discover _meta the fast path did not see, or
//     whose transport uses OAuth (toolhub uses none today).
type fastPath struct {
	c      *conn
	client *http.Client
	url    *url.URL
	header http.Header // read only: shared by every request
	tap    *httpTap
	modern bool

	nextID atomic.Int64
	tools  sync.Map // tool name → *fastTool
	h1     *h1Pool  // nil: calls go out on client (see h1Pool)

	// 2026-07-28 only.
	meta      map[string]json.RawMessage // the protocol's own _meta keys
	metaBytes []byte                     // meta, encoded: the _meta of a call without caller meta
	off       atomic.Bool                // a log level was set: calls take mcp-go's path
}

// fastTool is what the fast path makes once per tool.
type fastTool struct {
	head   []byte      // legacy: `,"method":"tools/call","params":{"name":…`; modern: `,"name":…}}`
	header http.Header // the request's headers (modern: with Mcp-Method, Mcp-Name)
	wire   []byte      // header, as request header lines (for h1Pool)
	slow   bool        // take mcp-go's path
}

// fastIDBase starts the fast path's JSON-RPC ids far from mcp-go's own
// counter on the same session, so the two never send the same id.
const fastIDBase = 1 << 40

// newFastPath returns the fast path of an HTTP connection, or nil when
// calls must take mcp-go's path.
func newFastPath(c *conn, hc *http.Client, base *http.Transport, rawURL string, headers map[string]string, inner *transport.StreamableHTTP, tap *httpTap) *fastPath {
	if inner == nil || inner.IsOAuthEnabled() {
		return nil
	}
	modern := mcp.IsModernProtocol(c.protocol)
	var meta map[string]json.RawMessage
	if modern {
		// The _meta mcp-go sends on every request, as it sent it on the
		// server/discover that opened the connection.
		raw := tap.discoverMeta()
		if raw == nil || json.Unmarshal(raw, &meta) != nil {
			return nil
		}
		var v string
		if json.Unmarshal(meta[mcp.MetaKeyProtocolVersion], &v) != nil || v != c.protocol {
			return nil
		}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	h := make(http.Header, 4+len(headers))
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	if s := inner.GetSessionId(); s != "" && !modern {
		h.Set(transport.HeaderKeySessionID, s)
	}
	if c.protocol != "" {
		h.Set(transport.HeaderKeyProtocolVersion, c.protocol)
	}
	for k, v := range headers {
		h.Set(k, v)
	}
	f := &fastPath{c: c, client: hc, url: u, header: h, tap: tap, modern: modern, meta: meta, h1: newH1Pool(base, u)}
	if modern {
		f.metaBytes, _ = json.Marshal(meta)
	}
	f.nextID.Store(fastIDBase)
	return f
}

// tool returns what the fast path made for a tool, making it the first
// time. inputSchema is the tool's schema as the vendor listed it.
func (f *fastPath) tool(name string, inputSchema []byte) *fastTool {
	if t, ok := f.tools.Load(name); ok {
		return t.(*fastTool)
	}
	quoted, _ := json.Marshal(name)
	t := &fastTool{header: f.header}
	if !f.modern {
		t.head = append([]byte(`,"method":"tools/call","params":{"name":`), quoted...)
	} else {
		// mcp-go re-encodes the params as a JSON object with sorted keys
		// (_meta, arguments, name) and mirrors method and name into headers.
		t.head = append(append([]byte(`,"name":`), quoted...), '}', '}')
		t.header = f.header.Clone()
		for k, v := range mcp.StandardHeaders(f.c.protocol, mcp.MethodToolsCall, append(append([]byte(`{"name":`), quoted...), '}')) {
			t.header.Set(k, v)
		}
		t.slow = bytes.Contains(inputSchema, []byte(`"x-mcp-header"`))
	}
	t.wire = h1Headers(t.header)
	f.tools.Store(name, t)
	return t
}

// takes reports whether the fast path makes a call of the tool.
func (f *fastPath) takes(t *fastTool) bool {
	return !t.slow && !f.off.Load()
}

// reqBuf is a pooled request body with its encoder.
type reqBuf struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var reqBufs = sync.Pool{New: func() any {
	b := &reqBuf{}
	b.enc = json.NewEncoder(&b.buf)
	return b
}}

// respBufs holds response bodies while they are read.
var respBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooled is the largest buffer put back in a pool.
const maxPooled = 64 << 10

// encode appends v as mcp-go's json.Marshal would write it.
func (b *reqBuf) encode(v any) error {
	if err := b.enc.Encode(v); err != nil {
		return err
	}
	b.buf.Truncate(b.buf.Len() - 1) // Encode's newline
	return nil
}

// envelope writes the JSON-RPC request of a tools/call, byte for byte what
// mcp-go's client sends for the same call.
//
// in, on a 2026-07-28 connection, is the retry of a multi round trip: its
// inputResponses and the vendor's requestState go into the params.
func (f *fastPath) envelope(b *reqBuf, id int64, t *fastTool, args any, meta *mcp.Meta, in *hub.InputResponses) error {
	b.buf.Reset()
	b.buf.WriteString(`{"jsonrpc":"2.0","id":`)
	var num [20]byte
	b.buf.Write(strconv.AppendInt(num[:0], id, 10))
	if f.modern {
		b.buf.WriteString(`,"method":"tools/call","params":{"_meta":`)
		if err := f.modernMeta(b, meta); err != nil {
			return err
		}
		b.buf.WriteString(`,"arguments":`)
		if err := b.encode(args); err != nil {
			return err
		}
		if in != nil {
			if in.Responses != nil {
				b.buf.WriteString(`,"inputResponses":`)
				b.buf.Write(in.Responses)
			}
			if in.State != "" {
				b.buf.WriteString(`,"requestState":`)
				if err := b.encode(in.State); err != nil {
					return err
				}
			}
		}
		b.buf.Write(t.head)
		return nil
	}
	b.buf.Write(t.head)
	b.buf.WriteString(`,"arguments":`)
	if err := b.encode(args); err != nil {
		return err
	}
	if meta != nil {
		b.buf.WriteString(`,"_meta":`)
		if err := b.encode(meta); err != nil {
			return err
		}
	}
	b.buf.WriteString(`}}`)
	return nil
}

// modernMeta writes a 2026-07-28 request's _meta: the caller's (as mcp-go
// has it after a round trip through JSON) with the protocol's own keys
// set; without caller meta, bytes made once.
func (f *fastPath) modernMeta(b *reqBuf, meta *mcp.Meta) error {
	if meta == nil {
		b.buf.Write(f.metaBytes)
		return nil
	}
	enc, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	m := map[string]any{}
	if err := json.Unmarshal(enc, &m); err != nil {
		return err
	}
	for k, v := range f.meta {
		m[k] = v
	}
	return b.encode(m)
}

// call sends one tools/call, recording what rec records, and returns the
// result object's bytes (a fresh slice), or an error as mcp-go's client
// would return it.
func (f *fastPath) call(ctx context.Context, rec *record, t *fastTool, args any, meta *mcp.Meta, in *hub.InputResponses) ([]byte, error) {
	b := reqBufs.Get().(*reqBuf)
	defer func() {
		if b.buf.Cap() <= maxPooled {
			reqBufs.Put(b)
		}
	}()
	id := f.nextID.Add(1)
	if err := f.envelope(b, id, t, args, meta, in); err != nil {
		return nil, fmt.Errorf("failed to marshal request: %w", err)
	}
	// In-flight calls end with the connection, as they do in mcp-go. The
	// cancel context derives from ctx before the record's value does: a
	// value context hides the AfterFunc of the hub's attempt context, and
	// WithCancel would then watch ctx with a goroutine of its own, every
	// call.
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(f.c.ctx, cancel)
	defer func() { stop(); cancel() }()
	ctx = withRecord(ctx, rec)
	if err := ctx.Err(); err != nil {
		return nil, transport.NewError(err)
	}
	resp, err := f.post(ctx, t, b.buf.Bytes())
	if err != nil {
		return nil, transport.NewError(fmt.Errorf("failed to send request: %w", err))
	}
	defer resp.Body.Close()
	return f.read(ctx, resp, id)
}

// post sends a tools/call on the fast path's own connections (h1Pool)
// where it can, else through the manager's client, and records what
// recordingTransport records.
func (f *fastPath) post(ctx context.Context, t *fastTool, body []byte) (*http.Response, error) {
	if f.h1 == nil {
		return f.do(ctx, http.MethodPost, t.header, body, nil)
	}
	resp, err := f.h1.post(ctx, t.wire, body)
	if errors.Is(err, errH1Redo) {
		return f.do(ctx, http.MethodPost, t.header, body, nil)
	}
	recordFrom(ctx).observe(resp, err, f.c.v.m.opts.Now)
	return inSession(resp, err)
}

// close lets go of the fast path's kept connections.
func (f *fastPath) close() {
	if f.h1 != nil {
		f.h1.close()
	}
}

// do sends one HTTP request on the session.
func (f *fastPath) do(ctx context.Context, method string, header http.Header, body []byte, extra http.Header) (*http.Response, error) {
	req := &http.Request{
		Method:     method,
		URL:        f.url,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     header,
		Host:       f.url.Host,
	}
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	if extra != nil {
		h := header.Clone()
		for k, v := range extra {
			h[k] = v
		}
		req.Header = h
	}
	return inSession(f.client.Do(req.WithContext(ctx)))
}

// inSession returns the vendor's response to a request on the session, or
// transport.ErrSessionTerminated for a 404: the vendor forgot the session,
// and the connection is re-dialled.
func inSession(resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		resp.Body.Close()
		return nil, transport.ErrSessionTerminated
	}
	return resp, nil
}

// read reads the vendor's answer to request id.
func (f *fastPath) read(ctx context.Context, resp *http.Response, id int64) ([]byte, error) {
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return nil, f.statusError(ctx, resp)
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mediaType {
	case "application/json":
		buf := respBufs.Get().(*bytes.Buffer)
		buf.Reset()
		defer func() {
			if buf.Cap() <= maxPooled {
				respBufs.Put(buf)
			}
		}()
		if _, err := buf.ReadFrom(resp.Body); err != nil {
			return nil, transport.NewError(fmt.Errorf("failed to decode response: %w", err))
		}
		msg, err := parseMessage(buf.Bytes())
		if err != nil || msg.id == nil {
			// Rare: say what mcp-go's decoder says (it reads the first
			// JSON value and stops there).
			var r transport.JSONRPCResponse
			if err := json.NewDecoder(bytes.NewReader(buf.Bytes())).Decode(&r); err != nil {
				return nil, transport.NewError(fmt.Errorf("failed to decode response: %w", err))
			}
			if r.ID.IsNil() {
				return nil, transport.NewError(fmt.Errorf("response should contain RPC id: %v", r))
			}
			if r.ID.String() != mcp.NewRequestId(id).String() && !(r.Error != nil && r.ID.IsNil()) {
				return nil, otherRequest(id, r.ID.Value())
			}
			msg = wireMessage{id: json.RawMessage("0"), result: r.Result, err: r.Error}
		} else if !answers(msg, id) {
			return nil, otherRequest(id, rawID(msg.id))
		}
		return f.answer(ctx, msg)
	case "text/event-stream":
		return f.readStream(ctx, resp.Body, id)
	default:
		return nil, transport.NewError(fmt.Errorf("unexpected content type: %s", resp.Header.Get("Content-Type")))
	}
}

// answers reports whether the response msg answers request id: it
// carries that id (as mcp-go compares ids: 7 and 7.0 are one), or it is
// an error without an id (the vendor could not read the request).
func answers(msg wireMessage, id int64) bool {
	if msg.id == nil {
		return msg.err != nil
	}
	var num [20]byte
	if string(msg.id) == string(strconv.AppendInt(num[:0], id, 10)) {
		return true
	}
	var got mcp.RequestId
	return json.Unmarshal(msg.id, &got) == nil && got.String() == mcp.NewRequestId(id).String()
}

// rawID is a response's id for an error message.
func rawID(id json.RawMessage) any {
	if id == nil {
		return nil
	}
	return json.RawMessage(id)
}

// answer turns the response message into the result bytes or the JSON-RPC
// error, recording the error for classify as the tap does.
func (f *fastPath) answer(ctx context.Context, msg wireMessage) ([]byte, error) {
	if msg.err != nil {
		if rec := recordFrom(ctx); rec != nil {
			rec.mu.Lock()
			rec.rpcErr = msg.err
			rec.mu.Unlock()
		}
		return nil, msg.err.AsError()
	}
	return bytes.Clone(msg.result), nil
}

// statusError is the error of a non-2xx answer. The status itself (and
// Retry-After) is in the call's record, where classify finds it.
func (f *fastPath) statusError(ctx context.Context, resp *http.Response) error {
	if resp.StatusCode == http.StatusUnauthorized {
		return transport.NewError(&transport.AuthorizationRequiredError{})
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if msg, err := parseMessage(body); err == nil && msg.err != nil {
		if rec := recordFrom(ctx); rec != nil {
			rec.mu.Lock()
			rec.rpcErr = msg.err
			rec.mu.Unlock()
		}
		return msg.err.AsError()
	}
	return transport.NewError(fmt.Errorf("request failed with status %d: %s", resp.StatusCode, body))
}

// wireMessage is one JSON-RPC message as read off the wire.
type wireMessage struct {
	id     json.RawMessage // nil for a notification
	method string          // "" for a response
	result json.RawMessage
	err    *mcp.JSONRPCErrorDetails
}

// parseMessage decodes a JSON-RPC message; the result stays raw. A
// message of the usual shape is read in one pass without reflection
// (scanMessage); anything else in one typed pass of encoding/json.
func parseMessage(data []byte) (wireMessage, error) {
	if m, ok := scanMessage(data); ok {
		return m, nil
	}
	return decodeMessage(data)
}

// The members of a JSON-RPC message parseMessage reads.
const (
	msgID = iota
	msgMethod
	msgResult
	msgError
)

var messageFields = []string{msgID: "id", msgMethod: "method", msgResult: "result", msgError: "error"}

// scanMessage reads data as decodeMessage would, with jsonscan: it
// reports false, leaving data to decodeMessage, for an invalid message
// and where the two could differ (see jsonscan.Fields; also a method that
// is not a plain string, an error that does not decode). id and result
// are data's own bytes.
func scanMessage(data []byte) (wireMessage, bool) {
	var (
		m      wireMessage
		errRaw []byte
	)
	ok := jsonscan.Fields(data, messageFields, func(field int, v []byte) bool {
		switch field {
		case msgID:
			m.id = v
		case msgMethod:
			s, ok := jsonscan.String(v)
			m.method = string(s)
			return ok
		case msgResult:
			m.result = v
		case msgError:
			errRaw = v
		}
		return true
	})
	if !ok {
		return wireMessage{}, false
	}
	if len(errRaw) > 0 && string(errRaw) != "null" {
		m.err = new(mcp.JSONRPCErrorDetails)
		if json.Unmarshal(errRaw, m.err) != nil {
			return wireMessage{}, false
		}
	}
	if string(m.id) == "null" {
		m.id = nil
	}
	return m, true
}

// decodeMessage decodes a JSON-RPC message with one typed pass.
func decodeMessage(data []byte) (wireMessage, error) {
	var m struct {
		ID     json.RawMessage          `json:"id"`
		Method string                   `json:"method"`
		Result json.RawMessage          `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return wireMessage{}, err
	}
	id := m.ID
	if len(id) == 0 || string(id) == "null" {
		id = nil
	}
	return wireMessage{id: id, method: m.Method, result: m.Result, err: m.Error}, nil
}

// sseCursor is what resuming a stream needs: the last event id and the
// reconnection time the vendor asked for.
type sseCursor struct {
	lastID   string
	retry    time.Duration
	hasRetry bool
}

// readSSE reads events from r, calling fn with each event's data, until r
// ends or fn returns false. It reports whether the stream ended (EOF), as
// opposed to fn stopping or a read failing. Its parsing follows mcp-go's
// streamable HTTP transport: lines without their line break, data lines
// joined with "\n", an id counted once its event is dispatched.
func readSSE(r io.Reader, cur *sseCursor, fn func(data []byte) bool) (bool, error) {
	br := bufio.NewReader(r)
	var (
		data  []byte
		id    string
		hasID bool
		have  bool // data seen for this event
	)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: gather it whole.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if err == io.EOF {
				if have && len(data) > 0 {
					return fn(data), nil
				}
				return true, nil
			}
			return false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasID {
				cur.lastID = id
				hasID = false
			}
			if have && len(data) > 0 {
				if !fn(data) {
					return false, nil
				}
			}
			data, have = data[:0], false
			continue
		}
		switch {
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if have && len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
			have = true
		case bytes.HasPrefix(line, []byte("id:")):
			v := string(bytes.TrimPrefix(line[3:], []byte(" ")))
			if !strings.ContainsRune(v, 0) {
				id, hasID = v, true
			}
		case bytes.HasPrefix(line, []byte("retry:")):
			v := string(bytes.TrimPrefix(line[6:], []byte(" ")))
			if ms, err := strconv.ParseUint(v, 10, 31); err == nil && v != "" && strings.Trim(v, "0123456789") == "" {
				cur.retry, cur.hasRetry = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
}

// SSE resumption waits, as mcp-go's transport does.
var (
	defaultSSEReconnectDelay = time.Second
	minSSEReconnectDelay     = 10 * time.Millisecond
)

// readStream reads an SSE response until the response to request id.
func (f *fastPath) readStream(ctx context.Context, body io.ReadCloser, id int64) ([]byte, error) {
	// A blocked read ends with the call.
	stop := context.AfterFunc(ctx, func() { body.Close() })
	defer stop()
	// Requests the vendor makes during the call are answered while the
	// stream is read on, and abandoned when the call ends.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		cur    sseCursor
		out    []byte
		outErr error
		done   bool
	)
	handle := func(data []byte) bool {
		msg, err := parseMessage(data)
		if err != nil {
			f.c.v.log.Info("failed to unmarshal message (non-fatal)", "err", err, "message_len", len(data))
			return true
		}
		switch {
		case msg.id == nil:
			var n mcp.JSONRPCNotification
			if err := json.Unmarshal(data, &n); err != nil {
				f.c.v.log.Error("failed to unmarshal notification", "err", err)
				return true
			}
			f.tap.notify(n)
			return true
		case msg.method != "":
			var req transport.JSONRPCRequest
			if err := json.Unmarshal(data, &req); err == nil {
				f.serverRequest(sctx, req)
				return true
			}
		}
		if answers(msg, id) {
			out, outErr = f.answer(ctx, msg)
		} else {
			outErr = otherRequest(id, rawID(msg.id))
		}
		done = true
		return false
	}
	ended, err := readSSE(body, &cur, handle)
	for !done && ended && err == nil && ctx.Err() == nil && cur.lastID != "" && !f.modern {
		ended, err = f.resume(ctx, &cur, handle)
	}
	if done {
		return out, outErr
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, transport.NewError(cerr)
	}
	if err != nil {
		return nil, transport.NewError(fmt.Errorf("failed to resume the SSE stream for the response: %w", err))
	}
	return nil, transport.NewError(errors.New("unexpected nil response"))
}

// resume reopens a stream the vendor ended before the response with a GET
// carrying Last-Event-ID (the 2025-11-25 way, SEP-1699), after the wait
// the vendor asked for.
func (f *fastPath) resume(ctx context.Context, cur *sseCursor, handle func([]byte) bool) (bool, error) {
	d := defaultSSEReconnectDelay
	if cur.hasRetry {
		d = max(cur.retry, minSSEReconnectDelay)
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return false, ctx.Err()
	}
	resp, err := f.do(ctx, http.MethodGet, f.header, nil, http.Header{"Accept": {"text/event-stream"}, "Last-Event-Id": {cur.lastID}})
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("unexpected status %d", resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return false, fmt.Errorf("unexpected content type %q", resp.Header.Get("Content-Type"))
	}
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()
	return readSSE(resp.Body, cur, handle)
}

// serverRequest answers a vendor's request made on the call's stream with
// the client's request handler, and POSTs the answer back on the session,
// as mcp-go's transport does (handleIncomingRequest).
func (f *fastPath) serverRequest(ctx context.Context, req transport.JSONRPCRequest) {
	h := f.tap.requestHandler()
	if h == nil {
		f.c.v.log.Error("received request from server but no handler set", "method", req.Method)
		f.respond(ctx, transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND,
			fmt.Sprintf("no handler configured for method: %s", req.Method), nil))
		return
	}
	go func() {
		defer func() {
			if r := recover(); r != nil {
				f.c.v.log.Error("panic handling server request", "method", req.Method, "panic", r)
				f.respond(ctx, transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR,
					fmt.Sprintf("internal error: panic in request handler: %v", r), nil))
			}
		}()
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resp, err := h(rctx, req)
		if err != nil {
			f.c.v.log.Error("error handling request", "method", req.Method, "err", f.c.v.red.Redact(err.Error()))
			code, msg := mcp.INTERNAL_ERROR, err.Error()
			switch {
			case errors.Is(err, context.Canceled):
				code, msg = mcp.REQUEST_INTERRUPTED, "request was cancelled"
			case errors.Is(err, context.DeadlineExceeded):
				code, msg = mcp.REQUEST_INTERRUPTED, "request timed out"
			case req.Method == string(mcp.MethodSamplingCreateMessage):
				msg = fmt.Sprintf("sampling request failed: %v", err)
			}
			f.respond(rctx, transport.NewJSONRPCErrorResponse(req.ID, code, msg, nil))
			return
		}
		if resp != nil {
			f.respond(rctx, resp)
		}
	}()
}

// respond POSTs a response to a vendor's request.
func (f *fastPath) respond(ctx context.Context, resp *transport.JSONRPCResponse) {
	body, err := json.Marshal(resp)
	if err != nil {
		f.c.v.log.Error("failed to marshal response", "err", err)
		return
	}
	r, err := f.do(ctx, http.MethodPost, f.header, body, nil)
	if err != nil {
		f.c.v.log.Error("failed to send response to server", "err", f.c.v.red.Redact(err.Error()))
		return
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK && r.StatusCode != http.StatusAccepted {
		f.c.v.log.Error("server rejected response", "status", r.StatusCode)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
}

// wireResult is a CallToolResult as it comes on the wire, for one typed
// pass over it.
type wireResult struct {
	Meta       *mcp.Meta      `json:"_meta"`
	ResultType string         `json:"resultType"`
	Content    *[]wireContent `json:"content"`
	Structured any            `json:"structuredContent"`
	IsError    bool           `json:"isError"`
}

// wireContent holds the fields of the content blocks decoded here: text,
// image and audio. Other blocks take mcp-go's decoder.
type wireContent struct {
	Type        string           `json:"type"`
	Text        string           `json:"text"`
	Data        string           `json:"data"`
	MIMEType    string           `json:"mimeType"`
	Annotations *mcp.Annotations `json:"annotations"`
	Meta        *mcp.Meta        `json:"_meta"`
}

// decodeResult decodes a tools/call result into hub.Result, with Raw set
// to raw (minus toolhub's own _meta keys). Text, image and audio blocks,
// structuredContent and isError are decoded in one typed pass; anything
// else (resource links, embedded resources, a missing content, a
// resultType, a value of an unexpected type) is decoded by mcp-go's
// ParseCallToolResult, which also gives the error of a result it cannot
// take — the same error mcp-go's path gives.
func decodeResult(raw []byte) (*hub.Result, error) {
	if r, ok := scanResult(raw); ok {
		return r, nil
	}
	return decodeResultTyped(raw)
}

// decodeResultTyped is decodeResult with encoding/json.
func decodeResultTyped(raw []byte) (*hub.Result, error) {
	var w wireResult
	if err := json.Unmarshal(raw, &w); err == nil && w.Content != nil && w.ResultType == "" {
		if content, ok := simpleContent(*w.Content); ok {
			return &hub.Result{Content: content, Structured: w.Structured, IsError: w.IsError, Final: markedFinal(w.IsError, w.Meta), Raw: ownMeta(raw, w.Meta)}, nil
		}
	}
	msg := json.RawMessage(raw)
	res, err := mcp.ParseCallToolResult(&msg)
	if err != nil {
		return nil, err
	}
	return &hub.Result{Content: res.Content, Structured: res.StructuredContent, IsError: res.IsError, Final: markedFinal(res.IsError, res.Meta), Raw: ownMeta(raw, res.Meta)}, nil
}

// The members of a result and of a content block scanResult reads; a
// result's _meta and resultType and a block's annotations and _meta are
// left to the typed pass.
const (
	resContent = iota
	resIsError
	resStructured
	resMeta
	resResultType
)

var resultFields = []string{resContent: "content", resIsError: "isError", resStructured: "structuredContent", resMeta: "_meta", resResultType: "resultType"}

const (
	blockType = iota
	blockText
	blockData
	blockMIMEType
	blockAnnotations
	blockMeta
)

var blockFields = []string{blockType: "type", blockText: "text", blockData: "data", blockMIMEType: "mimeType", blockAnnotations: "annotations", blockMeta: "_meta"}

// scanResult is decodeResult's typed pass for the usual result, read
// without reflection: content of text, image and audio blocks without
// annotations or _meta, isError, structuredContent, and no _meta or
// resultType. It reports false, leaving raw to the typed pass, for
// anything else, and wherever the two could differ (see jsonscan.Fields;
// also a value of another type).
func scanResult(raw []byte) (*hub.Result, bool) {
	var (
		ws         []wireContent
		content    bool
		structured any
		isError    bool
	)
	ok := jsonscan.Fields(raw, resultFields, func(field int, v []byte) bool {
		var ok bool
		switch field {
		case resContent:
			content = true
			return jsonscan.Array(v, func(elem []byte) bool {
				w, ok := scanContent(elem)
				ws = append(ws, w)
				return ok
			})
		case resIsError:
			isError, ok = jsonscan.Bool(v)
			return ok
		case resStructured:
			if string(v) == "null" {
				return true
			}
			structured, ok = decodeAs[any](v)
			return ok
		}
		return false // _meta, resultType
	})
	if !ok || !content {
		return nil, false
	}
	blocks, ok := simpleContent(ws)
	if !ok {
		return nil, false
	}
	return &hub.Result{Content: blocks, Structured: structured, IsError: isError, Raw: raw}, true
}

// scanContent reads a content block for scanResult.
func scanContent(elem []byte) (wireContent, bool) {
	var w wireContent
	ok := jsonscan.Fields(elem, blockFields, func(field int, v []byte) bool {
		var dst *string
		switch field {
		case blockType:
			dst = &w.Type
		case blockText:
			dst = &w.Text
		case blockData:
			dst = &w.Data
		case blockMIMEType:
			dst = &w.MIMEType
		default:
			return false // annotations, _meta
		}
		if s, ok := jsonscan.String(v); ok {
			*dst = string(s)
			return true
		}
		// Escapes or invalid UTF-8: encoding/json's own decoding.
		var ok bool
		*dst, ok = decodeAs[string](v)
		return ok && v[0] == '"'
	})
	return w, ok
}

// decodeAs decodes v with encoding/json; apart, so that only its own T
// goes to the heap.
func decodeAs[T any](v []byte) (T, bool) {
	var t T
	err := json.Unmarshal(v, &t)
	return t, err == nil
}

// markedFinal reports whether a tool error's _meta marks it final
// ([hub.MetaFinal]).
func markedFinal(isError bool, m *mcp.Meta) bool {
	return isError && m != nil && hub.MarkedFinal(m.AdditionalFields)
}

func simpleContent(ws []wireContent) ([]mcp.Content, bool) {
	if len(ws) == 0 {
		return nil, true
	}
	out := make([]mcp.Content, len(ws))
	for i, w := range ws {
		a := mcp.Annotated{Annotations: w.Annotations}
		switch w.Type {
		case mcp.ContentTypeText:
			out[i] = mcp.TextContent{Annotated: a, Meta: w.Meta, Type: w.Type, Text: w.Text}
		case mcp.ContentTypeImage:
			out[i] = mcp.ImageContent{Annotated: a, Meta: w.Meta, Type: w.Type, Data: w.Data, MIMEType: w.MIMEType}
		case mcp.ContentTypeAudio:
			out[i] = mcp.AudioContent{Annotated: a, Meta: w.Meta, Type: w.Type, Data: w.Data, MIMEType: w.MIMEType}
		default:
			return nil, false
		}
	}
	return out, true
}

// ownMeta returns raw without the _meta keys that are toolhub's own
// ("toolhub/…", in any case): a vendor must not be able to write
// toolhub's provenance. raw is returned as is when it has none.
func ownMeta(raw []byte, meta *mcp.Meta) []byte {
	if meta == nil || !hasOwnKey(meta.AdditionalFields) {
		return raw
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil
	}
	for key, val := range obj {
		if !strings.EqualFold(key, "_meta") { // encoding/json matches keys without regard to case
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(val, &m); err != nil {
			continue
		}
		for k := range m {
			if isOwnKey(k) {
				delete(m, k)
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil
		}
		obj[key] = b
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	return out
}

func hasOwnKey(m map[string]any) bool {
	for k := range m {
		if isOwnKey(k) {
			return true
		}
	}
	return false
}

func isOwnKey(k string) bool {
	return len(k) >= len("toolhub/") && strings.EqualFold(k[:len("toolhub/")], "toolhub/")
}

// needsInput reports whether a 2026-07-28 result asks for input (SEP-2322).
func needsInput(raw []byte) bool {
	if !bytes.Contains(raw, []byte(mcp.ResultTypeInputRequired)) {
		return false
	}
	var r struct {
		ResultType mcp.ResultType `json:"resultType"`
	}
	return json.Unmarshal(raw, &r) == nil && r.ResultType == mcp.ResultTypeInputRequired
}

// repeatedKeys refuses a tools/call result whose bytes (raw, the result as
// the vendor sent it) have an object with a key that repeats, or that
// differs from another only in case. Readers disagree on such a document:
// encoding/json, which output validation and REST read the result with,
// takes the last of two equal keys and matches struct fields without
// regard to case; the fast path's splice picks members by exact name; a
// client may take the first. Refused, what toolhub validated is what every
// client receives. A result without its bytes (nil raw) goes out encoded
// from what was decoded, so it is the same on every path already.
func repeatedKeys(vendor, tool string, raw []byte) error {
	if raw == nil {
		return nil
	}
	if key, ok := jsonscan.RepeatedKey(raw); ok {
		return &hub.Error{Code: hub.CodeInvalidOutput, Vendor: vendor,
			Message: fmt.Sprintf("vendor %q: tool %q: the result has an object whose key %q repeats another key or differs from it only in case; clients would read different values, so the result is refused (the vendor must send each key once)", vendor, tool, key)}
	}
	if key, want, ok := caseVariant(raw); ok {
		return &hub.Error{Code: hub.CodeInvalidOutput, Vendor: vendor,
			Message: fmt.Sprintf("vendor %q: tool %q: the result has the key %q where the protocol's member is %q; a key that differs from a member's name only in case reads as that member to some clients and not to others (a repeat of it, as it were), so the result is refused", vendor, tool, key, want)}
	}
	return nil
}

// The members of a result and of a content block, as the protocol spells
// them: a key equal to one but for case is read as the member by
// encoding/json's struct decoding, and not by readers that match names
// exactly.
var (
	resultMembers = []string{"content", "structuredContent", "isError", "_meta", "resultType"}
	blockMembers  = []string{"type", "text", "data", "mimeType", "annotations", "_meta", "resource", "uri", "name", "title", "description", "size", "icons", "blob"}
)

// caseVariant reports a key of the result object raw, or of one of its
// content blocks, that equals a member's name (want) but for case.
func caseVariant(raw []byte) (key, want string, found bool) {
	check := func(k []byte, names []string) bool {
		name := unquoteKey(k)
		for _, n := range names {
			if name != n && strings.EqualFold(name, n) {
				key, want, found = name, n, true
				return false
			}
		}
		return true
	}
	jsonscan.Object(raw, func(k, v []byte) bool {
		if !check(k, resultMembers) {
			return false
		}
		if unquoteKey(k) == "content" {
			jsonscan.Array(v, func(elem []byte) bool {
				jsonscan.Object(elem, func(k, _ []byte) bool { return check(k, blockMembers) })
				return !found
			})
		}
		return !found
	})
	return key, want, found
}

// unquoteKey is a key as jsonscan.Object gives it, with escapes decoded.
func unquoteKey(k []byte) string {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k)
	}
	var s string
	_ = json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &s)
	return s
}
