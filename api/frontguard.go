package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
	"github.com/toolhub/toolhub/registry"
)

// Timeouts bound the phases of a request on the front door. Zero fields
// mean the defaults written next to them.
type Timeouts struct {
	// ReadHeader bounds reading the request line and headers; 10 s.
	ReadHeader time.Duration
	// Read bounds reading the whole request body, counted from when the
	// handler starts; 30 s. A body that has not arrived by then is
	// answered 408 and the connection closed.
	Read time.Duration
	// Write bounds the whole answer, counted from when the handler starts;
	// 5 min (longer than the slowest vendor call with its retries should
	// take). Streams are exempt: WebSocket upgrades, and server-sent
	// events on the routes that stream (MCP, A2A, the planner).
	Write time.Duration
	// Idle bounds how long a keep-alive connection waits for its next
	// request; 2 min.
	Idle time.Duration
}

func (t *Timeouts) defaults() {
	if t.ReadHeader <= 0 {
		t.ReadHeader = 10 * time.Second
	}
	if t.Read <= 0 {
		t.Read = 30 * time.Second
	}
	if t.Write <= 0 {
		t.Write = 5 * time.Minute
	}
	if t.Idle <= 0 {
		t.Idle = 2 * time.Minute
	}
}

// HTTPServer returns the http.Server to serve s with: its connection
// timeouts ([Options].Timeouts) and a header size bound. The per-request
// bounds (body size and read time, write time) are s's own, for every
// route.
func (s *Server) HTTPServer() *http.Server {
	t := s.opts.Timeouts
	return &http.Server{Handler: s, ReadHeaderTimeout: t.ReadHeader, IdleTimeout: t.Idle, MaxHeaderBytes: 64 << 10}
}

// admit is the one layer every request passes before authentication and
// routing:
//
//   - with authentication off, the Host must be a loopback name (a page on
//     a name that resolves to 127.0.0.1 — DNS rebinding — is refused);
//   - a state-changing request (not GET, HEAD, OPTIONS) from a browser on
//     another origin is refused (Sec-Fetch-Site, else Origin against Host);
//   - a state-changing request's body must be application/json, and a
//     declared length must be within MaxBodyBytes;
//   - the body must arrive within Timeouts.Read (readBody reads it, once
//     the caller is authenticated);
//   - the answer must be written within Timeouts.Write, unless it is a
//     stream (WebSocket, server-sent events).
//
// It answers the request itself and returns false when it refuses it.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.Authenticate == nil && !loopbackHost(r.Host) {
		s.refuse(w, r, hub.CodeForbidden, fmt.Sprintf("Host %q is not a loopback name: with authentication off toolhub answers only requests addressed to localhost, 127.0.0.1 or [::1] "+
			"(a web page on a name that resolves here must not reach it); switch auth on to serve other names", r.Host))
		return false
	}
	if err := s.xorigin.Check(r); err != nil {
		s.refuse(w, r, hub.CodeForbidden, fmt.Sprintf("%s %s refused: a cross-origin request from a browser page (Origin %q, Sec-Fetch-Site %q) may not change anything here; "+
			"call toolhub from its own origin or from a program", r.Method, r.URL.Path, r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")))
		return false
	}
	// The connection keeps a deadline from its previous request: set or
	// clear it for this one. (Off a real connection, in tests, deadlines
	// are not supported: no bound.)
	rc := http.NewResponseController(w)
	if streaming(r) {
		_ = rc.SetWriteDeadline(time.Time{})
	} else {
		_ = rc.SetWriteDeadline(time.Now().Add(s.opts.Timeouts.Write))
	}
	if !hasBody(r) {
		return true
	}
	if !safeMethod(r.Method) && !isJSON(r.Header.Get("Content-Type")) {
		s.refuse(w, r, hub.CodeUnsupportedMedia, fmt.Sprintf("%s %s: Content-Type %q refused: send the body as application/json",
			r.Method, r.URL.Path, r.Header.Get("Content-Type")))
		return false
	}
	if r.ContentLength > s.opts.MaxBodyBytes {
		s.refuse(w, r, hub.CodeTooLarge, fmt.Sprintf("request body of %d bytes is over the %d-byte limit (max_body_bytes)", r.ContentLength, s.opts.MaxBodyBytes))
		return false
	}
	// Whatever reads the body from now on (readBody, or the server
	// discarding it after a refusal) reads it within Timeouts.Read.
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.Timeouts.Read))
	return true
}

func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && (r.ContentLength != 0 || len(r.TransferEncoding) > 0)
}

// readBody reads an admitted request's body whole, at most MaxBodyBytes,
// within the read deadline admit set, and gives it to the handlers from
// memory. It runs after authentication: a caller without a key makes the
// hub buffer nothing. It answers the request and returns false when the
// body is refused.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) bool {
	if !hasBody(r) {
		return true
	}
	limit := s.opts.MaxBodyBytes
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		s.refuse(w, r, hub.CodeRequestTimeout, fmt.Sprintf("the request body did not arrive within %v", s.opts.Timeouts.Read))
		return false
	case err != nil:
		s.refuse(w, r, hub.CodeInvalidRequest, "reading the request body: "+err.Error())
		return false
	case int64(len(body)) > limit:
		s.refuse(w, r, hub.CodeTooLarge, fmt.Sprintf("request body is over the %d-byte limit (max_body_bytes)", limit))
		return false
	}
	// Read whole: a stream that follows must not time out on the idle read
	// the server keeps on the connection.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	if d := registry.JSONDepth(body); d > MaxJSONDepth {
		s.refuse(w, r, hub.CodeInvalidRequest, fmt.Sprintf("request body nests %d levels deep, over the limit of %d", d, MaxJSONDepth))
		return false
	}
	r.Body = &readBodyBytes{Reader: bytes.NewReader(body), b: body}
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil
	return true
}

// readBodyBytes is a body readBody read whole; the MCP front door takes
// its bytes without copying them (requestBody).
type readBodyBytes struct {
	*bytes.Reader
	b []byte
}

func (*readBodyBytes) Close() error { return nil }

// unread returns the body's bytes while nothing has read them.
func (b *readBodyBytes) unread() ([]byte, bool) { return b.b, b.Len() == len(b.b) }

// refuse answers a request admit turned away, with the status of code
// (httperr.Status): a JSON-RPC error on the JSON-RPC routes (/mcp, /a2a),
// the REST error body elsewhere. A body left unread closes the connection.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code hub.Code, msg string) {
	status := httperr.Status(code)
	if status == http.StatusRequestTimeout || status == http.StatusRequestEntityTooLarge {
		w.Header().Set("Connection", "close")
	}
	err := &hub.Error{Code: code, Message: msg}
	if p := r.URL.Path; p == "/mcp" || strings.HasPrefix(p, "/mcp/") || p == "/a2a" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(rpcError(nil, rpcCode(code), err))
		return
	}
	writeError(w, r, err, "")
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// streaming reports a request whose answer is a stream: a WebSocket
// upgrade, or a client that accepts server-sent events on a route that
// streams them (MCP, A2A, the planner). Other routes answer whole, within
// the write deadline, whatever the client accepts.
func streaming(r *http.Request) bool {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return true
	}
	p := r.URL.Path
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream") &&
		(p == "/mcp" || strings.HasPrefix(p, "/mcp/") || p == "/a2a" || p == "/v1/plan")
}

// eventStream reports a request answered with server-sent events (a
// WebSocket re-checks its key itself: [JobRoutesOptions].Reauthenticate).
func eventStream(r *http.Request) bool {
	return streaming(r) && !strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// RecheckEvery is how often an open event stream checks that its key
// still holds.
const RecheckEvery = 5 * time.Second

// recheck returns r with a context that ends when r's credentials stop
// holding (checked every RecheckEvery while the request runs), and a stop
// to call when the request ends.
func (s *Server) recheck(r *http.Request, p auth.Principal) (*http.Request, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	var t *time.Timer
	var mu sync.Mutex
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(RecheckEvery, func() {
		if _, err := s.opts.Authenticate(r); err != nil {
			if ctx.Err() == nil {
				s.log.Info("stream ended: its key was revoked or expired", "path", r.URL.Path, "key", p.KeyID)
			}
			cancel()
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() == nil {
			t.Reset(RecheckEvery)
		}
	})
	return r.WithContext(ctx), func() {
		cancel()
		mu.Lock()
		defer mu.Unlock()
		t.Stop()
	}
}

// loopbackHost reports whether a Host header names this machine's
// loopback: localhost or a loopback address, any port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
