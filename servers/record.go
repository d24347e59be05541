package servers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub/vendorconn"
)

// record collects what the wire saw of one logical request (a tool call or
// a tools/list page): the HTTP status and Retry-After of a failed HTTP
// response, a network error, a JSON-RPC error, and, when asked for, the raw
// JSON result. mcp-go passes the caller's context down to its transports
// and to http.NewRequestWithContext, so a record travels in the context:
// the manager's RoundTripper and transport wrapper find it there. This
// keeps the status of each request with that request, even under
// concurrent calls on one connection.
type record struct {
	wantRaw  bool  // keep the raw result
	maxBytes int64 // bound on an HTTP response body; <= 0 means none
	// listLimit, when above zero, holds the answer to the tools/list
	// bounds (listguard.go) while it is read, its bytes to listLimit.
	listLimit int64

	mu         sync.Mutex
	status     int // last non-2xx HTTP status
	retryAfter time.Duration
	netErr     error
	tooLarge   bool
	rpcErr     *mcp.JSONRPCErrorDetails
	raw        json.RawMessage
	listErr    error // a tools/list bound the answer failed while read
}

type recordSnapshot struct {
	status     int
	retryAfter time.Duration
	netErr     error
	tooLarge   bool
	rpcErr     *mcp.JSONRPCErrorDetails
	raw        json.RawMessage
	listErr    error
}

func (r *record) snapshot() recordSnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return recordSnapshot{r.status, r.retryAfter, r.netErr, r.tooLarge, r.rpcErr, r.raw, r.listErr}
}

type recordKey struct{}

func withRecord(ctx context.Context, r *record) context.Context {
	return context.WithValue(ctx, recordKey{}, r)
}

func recordFrom(ctx context.Context) *record {
	r, _ := ctx.Value(recordKey{}).(*record)
	return r
}

// recordingTransport is the RoundTripper of the manager's HTTP client.
type recordingTransport struct {
	base http.RoundTripper
	now  func() time.Time
}

// CloseIdleConnections closes the base's idle connections.
func (t *recordingTransport) CloseIdleConnections() { closeIdle(t.base) }

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	rec := recordFrom(req.Context())
	rec.observe(resp, err, t.now)
	if rec == nil && err == nil && req.Method == http.MethodGet && resp.Body != nil {
		// An SSE vendor's event stream carries the answers to tools/list.
		if s, ok := req.Context().Value(listStreamKey{}).(*listStream); ok {
			resp.Body = s.wrap(resp.Body)
		}
	}
	return resp, err
}

// observe records what the wire said of one HTTP exchange, a network
// error or a non-2xx status and its Retry-After, and bounds the answer's
// body by maxBytes. A nil record observes nothing.
func (rec *record) observe(resp *http.Response, err error, now func() time.Time) {
	if rec == nil {
		return
	}
	if err != nil {
		rec.mu.Lock()
		rec.netErr = err
		rec.mu.Unlock()
		return
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		wait := vendorconn.RetryAfter(resp.Header.Get("Retry-After"), now())
		rec.mu.Lock()
		rec.status, rec.retryAfter = resp.StatusCode, wait
		rec.mu.Unlock()
	}
	switch {
	case resp.Body == nil:
	case rec.listLimit > 0:
		resp.Body = &listBody{rc: resp.Body, scan: newBodyScan(rec.listLimit), rec: rec}
	case rec.maxBytes > 0:
		resp.Body = &limitedBody{rc: resp.Body, left: rec.maxBytes, rec: rec}
	}
}

// listBody holds a tools/list answer's body to the tools/list bounds as
// it is read: a read past one fails, and nothing more is read.
type listBody struct {
	rc   io.ReadCloser
	scan *listScan
	rec  *record
	err  error
}

func (b *listBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if k, serr := b.scan.feed(p[:n]); serr != nil {
		b.err = serr
		b.rec.mu.Lock()
		b.rec.listErr = serr
		b.rec.mu.Unlock()
		return k, serr
	}
	return n, err
}

func (b *listBody) Close() error { return b.rc.Close() }

// limitedBody fails a read past the limit instead of buffering a huge
// response.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	rec  *record
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.rec.mu.Lock()
		b.rec.tooLarge = true
		b.rec.mu.Unlock()
		return 0, fmt.Errorf("%w: over %d bytes", ErrResponseTooLarge, b.rec.maxBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// tap wraps an mcp-go transport to see each response before the client
// decodes it: the JSON-RPC error, and the raw result when the record asks
// for it. mcp-go's client decodes tools into mcp.Tool, whose InputSchema
// struct keeps only type/properties/required/additionalProperties/$defs at
// the top level; the raw result keeps every schema keyword.
type tap struct {
	transport.Interface

	// The client's handlers, kept for the fast path (fast.go), which
	// reads some responses itself.
	notifyFn atomic.Pointer[func(mcp.JSONRPCNotification)]
	reqFn    atomic.Pointer[transport.RequestHandler]
	discover atomic.Pointer[json.RawMessage] // the _meta of the last server/discover sent

	// lists are the tools/list requests in flight, for a stream guard
	// (stdio, an SSE vendor's event stream); nil on streamable HTTP, where
	// each answer has a body of its own.
	lists *listIDs
}

// discoverMeta is the _meta of the last server/discover mcp-go sent: on
// 2026-07-28, what it puts in every request's _meta.
func (t *tap) discoverMeta() json.RawMessage {
	if m := t.discover.Load(); m != nil {
		return *m
	}
	return nil
}

// SetNotificationHandler keeps the client's handler and hands it on.
func (t *tap) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	t.notifyFn.Store(&h)
	t.Interface.SetNotificationHandler(h)
}

// notify hands a notification to the client's handler.
func (t *tap) notify(n mcp.JSONRPCNotification) {
	if h := t.notifyFn.Load(); h != nil && *h != nil {
		(*h)(n)
	}
}

// requestHandler is the client's handler of server-to-client requests.
func (t *tap) requestHandler() transport.RequestHandler {
	if h := t.reqFn.Load(); h != nil {
		return *h
	}
	return nil
}

func (t *tap) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if req.Method == string(mcp.MethodServerDiscover) {
		if p, ok := req.Params.(map[string]json.RawMessage); ok && p["_meta"] != nil {
			m := p["_meta"]
			t.discover.Store(&m)
		}
	}
	if t.lists != nil && req.Method == string(mcp.MethodToolsList) {
		if rec := recordFrom(ctx); rec != nil && rec.listLimit > 0 {
			k := t.lists.add(req.ID.Value(), rec.listLimit)
			defer t.lists.remove(k)
		}
	}
	resp, err := t.Interface.SendRequest(ctx, req)
	if err == nil && resp != nil && !(resp.ID.IsNil() && resp.Error != nil) && resp.ID.String() != req.ID.String() {
		// mcp-go's streamable HTTP transport takes the first response on
		// a request's stream, whatever its id.
		return nil, otherRequest(req.ID.Value(), resp.ID.Value())
	}
	if rec := recordFrom(ctx); rec != nil && resp != nil {
		rec.mu.Lock()
		if resp.Error != nil {
			rec.rpcErr = resp.Error
		} else if rec.wantRaw {
			rec.raw = resp.Result
		}
		rec.mu.Unlock()
	}
	return resp, err
}

// SetRequestHandler forwards server-to-client requests (ping, …), each
// with the raw request in its context (relay.go: which call it is for, and
// its cancellation).
func (t *tap) SetRequestHandler(h transport.RequestHandler) {
	t.reqFn.Store(&h)
	if b, ok := t.Interface.(transport.BidirectionalInterface); ok {
		b.SetRequestHandler(withVendorRequest(h))
	}
}

// httpTap is a tap over an HTTP transport. It keeps the optional
// interfaces the client looks for: transport.HTTPConnection (protocol
// version header; also tells the client not to send notifications/cancelled
// over HTTP), the connection-lost hook and the legacy-protocol marker.
type httpTap struct {
	tap
}

func (t *httpTap) SetProtocolVersion(v string) {
	if h, ok := t.Interface.(transport.HTTPConnection); ok {
		h.SetProtocolVersion(v)
	}
}

func (t *httpTap) SetConnectionLostHandler(fn func(error)) {
	if s, ok := t.Interface.(interface{ SetConnectionLostHandler(func(error)) }); ok {
		s.SetConnectionLostHandler(fn)
	}
}

func (t *httpTap) RequiresLegacyProtocol() bool {
	l, ok := t.Interface.(interface{ RequiresLegacyProtocol() bool })
	return ok && l.RequiresLegacyProtocol()
}

var (
	_ transport.BidirectionalInterface = (*tap)(nil)
	_ transport.HTTPConnection         = (*httpTap)(nil)
)

// otherRequest is the error of an answer to request id that carries
// another request's id: the call fails rather than take another answer
// as its own.
func otherRequest(id, got any) error {
	return fmt.Errorf("the answer to request %v carries the id of another request (%s); an answer must carry its request's id", id, idString(got))
}

func idString(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 64 {
		return "an unreadable id"
	}
	return string(b)
}
