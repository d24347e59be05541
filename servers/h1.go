package servers

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
)

// h1Pool is the fast path's own HTTP/1.1 client for tools/call. net/http's
// Transport hands every request to two goroutines of its connection (one
// writes it, one reads the answer and hands it back): two goroutine
// switches per call, often a thread wake-up each, on the call's critical
// path. The pool writes the request and reads the answer on the calling
// goroutine, on keep-alive connections it dials with the Transport's own
// dialer (netguard's, in toolhub: the outbound policy holds), TLS config,
// idle limits and compression setting, sending the headers the Transport
// sends (User-Agent, Accept-Encoding: gzip, Content-Length) and
// decompressing a gzip answer as it would.
//
// It is used only where it changes nothing else: no proxy for the vendor's
// URL, no custom TLS dialer, keep-alives on, and a base RoundTripper that
// is a plain *http.Transport (a tracing wrapper keeps the Transport). An
// answer the pool does not handle (a redirect, 101) is left to the
// Transport: the request is sent again through it, which is safe because
// the vendor did not act on a request it redirected.
type h1Pool struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	tls         *tls.Config // nil for http://
	addr        string      // host:port
	gzip        bool        // ask for gzip and decompress, as the Transport does
	maxIdle     int
	idleTimeout time.Duration
	maxHead     int64         // bound on an answer's head (MaxResponseHeaderBytes)
	req         *http.Request // read only: what http.ReadResponse is told was sent
	start       []byte        // "POST /path HTTP/1.1\r\nHost: …\r\nUser-Agent: …\r\n"

	mu     sync.Mutex
	idle   []*h1Conn // most recently used last
	closed bool
}

type h1Conn struct {
	nc     net.Conn
	br     *bufio.Reader // reads from hr
	hr     headReader
	idleAt time.Time
	reused bool
}

// headReader bounds what a vendor may send while the pool reads an
// answer's head, as the Transport's MaxResponseHeaderBytes does: the body
// is bounded by the call's own limit (limitedBody), the head would not be
// (http.ReadResponse reads header lines as long as they come).
type headReader struct {
	nc   net.Conn
	left int64 // bytes the head may still take; < 0: no bound (the body)
}

// errHeadTooLarge is a vendor's answer whose head passes the bound.
var errHeadTooLarge = errors.New("servers: vendor's response headers are over the size limit")

func (h *headReader) Read(p []byte) (int, error) {
	if h.left == 0 {
		return 0, errHeadTooLarge
	}
	if h.left > 0 && int64(len(p)) > h.left {
		p = p[:h.left]
	}
	n, err := h.nc.Read(p)
	if h.left > 0 {
		h.left -= int64(n)
	}
	return n, err
}

// newH1Pool returns the pool for requests to u through t, or nil when the
// Transport must send them (see h1Pool).
func newH1Pool(t *http.Transport, u *url.URL) *h1Pool {
	if t == nil || t.DisableKeepAlives || t.DialTLSContext != nil || legacyDialer(t) {
		return nil
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.User != nil {
		return nil
	}
	req := &http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}, Host: u.Host}
	if t.Proxy != nil {
		if p, err := t.Proxy(req); err != nil || p != nil {
			return nil
		}
	}
	p := &h1Pool{dial: t.DialContext, addr: hostPort(u), gzip: !t.DisableCompression,
		maxIdle: t.MaxIdleConnsPerHost, idleTimeout: t.IdleConnTimeout, req: req}
	if p.dial == nil {
		p.dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	if p.maxIdle <= 0 {
		p.maxIdle = http.DefaultMaxIdleConnsPerHost
	}
	if p.maxHead = t.MaxResponseHeaderBytes; p.maxHead <= 0 {
		p.maxHead = 10 << 20 // the Transport's default
	}
	if u.Scheme == "https" {
		p.tls = &tls.Config{}
		if t.TLSClientConfig != nil {
			p.tls = t.TLSClientConfig.Clone()
		}
		if p.tls.ServerName == "" {
			p.tls.ServerName = u.Hostname()
		}
		p.tls.NextProtos = []string{"http/1.1"}
	}
	p.start = fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: Go-http-client/1.1\r\n", u.RequestURI(), u.Host)
	return p
}

// legacyDialer reports whether t dials with the deprecated Dial or
// DialTLS, which the pool cannot use in their place.
func legacyDialer(t *http.Transport) bool {
	//lint:ignore SA1019 a Transport set up with the deprecated dialers must keep dialling with them
	return t.Dial != nil || t.DialTLS != nil
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// h1Headers renders h as request header lines, in the order the
// Transport writes them (sorted by key).
func h1Headers(h http.Header) []byte {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			b = append(append(append(append(b, k...), ": "...), v...), "\r\n"...)
		}
	}
	return b
}

// errH1Redo says the answer is one the Transport handles: send the request
// through it.
var errH1Redo = errors.New("servers: answer left to net/http")

// post sends one POST with the given header lines and body and returns
// the answer, whose Body must be closed. Its errors are the Transport's
// kind: a dial, write or read error (a *net.OpError and the like), or
// ctx's error once ctx is done.
func (p *h1Pool) post(ctx context.Context, header, body []byte) (*http.Response, error) {
	buf := h1Bufs.Get().(*[]byte)
	msg := append((*buf)[:0], p.start...)
	msg = append(msg, header...)
	if p.gzip {
		msg = append(msg, "Accept-Encoding: gzip\r\n"...)
	}
	msg = append(strconv.AppendInt(append(msg, "Content-Length: "...), int64(len(body)), 10), "\r\n\r\n"...)
	msg = append(msg, body...)
	defer func() {
		if cap(msg) <= maxPooled {
			*buf = msg
			h1Bufs.Put(buf)
		}
	}()
	for {
		c, err := p.get(ctx)
		if err != nil {
			return nil, err
		}
		resp, sent, err := p.roundTrip(ctx, c, msg)
		if err != nil && !sent && c.reused && ctx.Err() == nil {
			continue // a kept connection the vendor had closed: nothing reached it
		}
		return resp, err
	}
}

var h1Bufs = sync.Pool{New: func() any { return new([]byte) }}

// roundTrip writes msg on c and reads the answer's head. sent says
// whether any of msg may have reached the vendor.
func (p *h1Pool) roundTrip(ctx context.Context, c *h1Conn, msg []byte) (resp *http.Response, sent bool, err error) {
	// A done ctx interrupts the write or read; the connection is then
	// closed, not kept.
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	fail := func(e error) (*http.Response, bool, error) {
		stop()
		c.nc.Close()
		if cerr := ctx.Err(); cerr != nil {
			e = cerr
		}
		return nil, sent, e
	}
	n, err := c.nc.Write(msg)
	if err != nil {
		sent = n > 0
		return fail(err)
	}
	sent = true
	// The head may take maxHead bytes past what the reader holds already
	// (a kept connection's buffer is empty: see put).
	c.hr.left = p.maxHead
	for {
		resp, err = http.ReadResponse(c.br, p.req)
		if err != nil {
			return fail(err)
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 {
			break
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return fail(errors.New("servers: vendor switched protocols on a tools/call"))
		}
	}
	c.hr.left = -1
	b := &h1Body{rc: resp.Body, p: p, c: c, stop: stop, keep: !resp.Close}
	resp.Body = b
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		resp.Body.Close()
		return nil, true, errH1Redo // sent: not to be sent again on the pool
	}
	if p.gzip && resp.Header.Get("Content-Encoding") == "gzip" {
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
		resp.Body = &gzipBody{body: b}
	}
	return resp, true, nil
}

// get takes a kept connection the vendor has not closed, or dials one.
// The peek at a kept connection (a system call) is made outside mu.
func (p *h1Pool) get(ctx context.Context) (*h1Conn, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return nil, net.ErrClosed
			}
			break
		}
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if p.idleTimeout > 0 && time.Since(c.idleAt) > p.idleTimeout || !peerOpen(c.nc) {
			c.nc.Close()
			continue
		}
		c.reused = true
		return c, nil
	}
	nc, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if p.tls != nil {
		tc := tls.Client(nc, p.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	c := &h1Conn{nc: nc, hr: headReader{nc: nc, left: -1}}
	c.br = bufio.NewReaderSize(&c.hr, 16<<10)
	return c, nil
}

// put keeps c for the next request, or closes it.
func (p *h1Pool) put(c *h1Conn) {
	p.mu.Lock()
	if p.closed || len(p.idle) >= p.maxIdle || c.br.Buffered() > 0 {
		p.mu.Unlock()
		c.nc.Close()
		return
	}
	c.idleAt = time.Now()
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

// close closes the kept connections; calls in flight close theirs when
// they end.
func (p *h1Pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// h1Body is an answer's body: read to its end, it gives its connection
// back to the pool; closed before that, it closes the connection (reading
// the rest of an event stream could take forever).
type h1Body struct {
	rc   io.ReadCloser
	p    *h1Pool
	c    *h1Conn // nil once closed
	stop func() bool
	keep bool
	eof  bool
}

func (b *h1Body) Read(q []byte) (int, error) {
	if b.c == nil {
		return 0, net.ErrClosed
	}
	n, err := b.rc.Read(q)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *h1Body) Close() error {
	c := b.c
	if c == nil {
		return nil
	}
	b.c = nil
	if !b.eof {
		c.nc.Close() // before rc.Close, which would read the rest
		b.rc.Close()
		b.stop()
		return nil
	}
	b.rc.Close()
	if b.stop() && b.keep {
		b.p.put(c)
	} else {
		c.nc.Close()
	}
	return nil
}

// gzipBody decompresses a gzip answer, as the Transport does when it
// asked for gzip itself.
type gzipBody struct {
	body *h1Body
	zr   *gzip.Reader
	err  error
}

func (g *gzipBody) Read(q []byte) (int, error) {
	if g.zr == nil && g.err == nil {
		g.zr, g.err = gzip.NewReader(g.body)
	}
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.zr.Read(q)
	if err == io.EOF {
		// The compressed stream ended: read the body to its end, so the
		// connection can be kept.
		if _, derr := io.Copy(io.Discard, io.LimitReader(g.body, 4<<10)); derr != nil {
			return n, derr
		}
	}
	return n, err
}

func (g *gzipBody) Close() error { return g.body.Close() }
