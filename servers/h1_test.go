package servers

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// connTracker numbers a test vendor's connections and remembers which
// one carried each tools/call.
type connTracker struct {
	next  atomic.Int64
	mu    sync.Mutex
	calls []int64 // connection number of each tools/call, in order
	conns map[int64]net.Conn
}

type connNumKey struct{}

func trackConns(ct *connTracker) func(*httptest.Server) {
	ct.conns = map[int64]net.Conn{}
	return func(ts *httptest.Server) {
		ts.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			n := ct.next.Add(1)
			ct.mu.Lock()
			ct.conns[n] = c
			ct.mu.Unlock()
			return context.WithValue(ctx, connNumKey{}, n)
		}
	}
}

func (ct *connTracker) saw(r *http.Request) int64 {
	n, _ := r.Context().Value(connNumKey{}).(int64)
	ct.mu.Lock()
	ct.calls = append(ct.calls, n)
	ct.mu.Unlock()
	return n
}

func (ct *connTracker) callConns() []int64 {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return append([]int64(nil), ct.calls...)
}

// toolsCalls has a test vendor number its connections (ct) and show each
// tools/call, with its request, to answer before the MCP server sees it:
// answer reports whether it answered (nil: the server answers all).
func toolsCalls(ct *connTracker, answer func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool) func(*httptest.Server) {
	return func(ts *httptest.Server) {
		trackConns(ct)(ts)
		inner := ts.Config.Handler
		ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				body := new(bytes.Buffer)
				_, _ = body.ReadFrom(r.Body)
				r.Body = readCloser{bytes.NewReader(body.Bytes())}
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				_ = json.Unmarshal(body.Bytes(), &msg)
				if msg.Method == "tools/call" {
					ct.saw(r)
					if answer != nil && answer(w, r, msg.ID) {
						return
					}
				}
			}
			inner.ServeHTTP(w, r)
		})
	}
}

// h1Vendor is a wireVendor whose tools/call answers a test controls per
// call (see toolsCalls), on tracked connections, with a harness on it.
func h1Vendor(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool) (*wireVendor, *connTracker, *harness) {
	t.Helper()
	ct := &connTracker{}
	wv := newWireVendorWith(t, newMCPServer(), toolsCalls(ct, answer))
	h := wireHarness(t, wv, true)
	if h.fastConn(t).h1 == nil {
		t.Fatal("the fast path has no HTTP/1.1 pool for a plain http:// vendor")
	}
	return wv, ct, h
}

// h1Harness is a manager with opts connected to the vendor at url as "hv".
func h1Harness(t *testing.T, url string, opts *Options) *harness {
	t.Helper()
	opts.HealthInterval = -1
	h := newHarness(t, opts)
	if err := h.m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, url)); err != nil {
		t.Fatal(err)
	}
	h.waitReady("hv")
	return h
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func (h *harness) fastConn(t *testing.T) *fastPath {
	t.Helper()
	v, _ := h.m.set.Get("hv")
	c := v.cur.Load()
	if c == nil || c.fast == nil {
		t.Fatal("no fast path on the vendor's connection")
	}
	return c.fast
}

func callEcho(t *testing.T, h *harness) (*hub.Result, error) {
	t.Helper()
	return h.call(ctxTimeout(t, 10*time.Second), "hv", "echo", map[string]any{"text": "x"})
}

// Calls in a row share one kept connection; one the vendor closes while
// it is idle, or after an answer that says Connection: close, is not used
// again and no call fails for it.
func TestH1PoolKeepsAndReplacesConnections(t *testing.T) {
	var closeNext atomic.Bool
	_, ct, h := h1Vendor(t, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
		if closeNext.CompareAndSwap(true, false) {
			w.Header().Set("Connection", "close")
		}
		return false
	})
	for range 3 {
		if _, err := callEcho(t, h); err != nil {
			t.Fatal(err)
		}
	}
	got := ct.callConns()
	if got[0] != got[1] || got[1] != got[2] {
		t.Fatalf("three calls in a row went out on connections %v; want one kept connection", got)
	}

	// The vendor closes the kept connection while it is idle.
	ct.mu.Lock()
	ct.conns[got[2]].Close()
	ct.mu.Unlock()
	f := h.fastConn(t)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		f.h1.mu.Lock()
		closed := len(f.h1.idle) == 1 && !peerOpen(f.h1.idle[0].nc)
		f.h1.mu.Unlock()
		if closed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pool's idle connection never saw the vendor's close")
		}
	}
	if _, err := callEcho(t, h); err != nil {
		t.Fatalf("a call after the vendor closed the idle connection: %v", err)
	}
	// Connection: close on an answer.
	closeNext.Store(true)
	for range 2 {
		if _, err := callEcho(t, h); err != nil {
			t.Fatal(err)
		}
	}
	got = ct.callConns()
	if len(got) != 6 || got[3] == got[2] || got[4] != got[3] || got[5] == got[4] {
		t.Errorf("calls went out on connections %v; want 3 on one, the 4th and 5th on a second (the vendor closed the first), the 6th on a third (Connection: close)", got)
	}
}

// A call canceled while the vendor works fails as canceled, and its
// connection is closed, not kept.
func TestH1PoolCancel(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	_, _, h := h1Vendor(t, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
		close(arrived)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	defer close(release)
	ctx, cancel := context.WithCancel(ctxTimeout(t, 10*time.Second))
	go func() { <-arrived; cancel() }()
	_, err := h.call(ctx, "hv", "echo", map[string]any{"text": "x"})
	var he *hub.Error
	if !errors.As(err, &he) || he.Code != hub.CodeCanceled {
		t.Fatalf("canceled call: %v; want code %s", err, hub.CodeCanceled)
	}
	f := h.fastConn(t)
	f.h1.mu.Lock()
	idle := len(f.h1.idle)
	f.h1.mu.Unlock()
	if idle != 0 {
		t.Errorf("%d connections kept after a canceled call; want 0", idle)
	}
}

// A gzip answer is decompressed, as net/http's Transport does when it
// asked for gzip; a redirect is followed by the Transport.
func TestH1PoolGzipAndRedirect(t *testing.T) {
	var mode atomic.Value
	mode.Store("")
	var redirected atomic.Int64
	wv, _, h := h1Vendor(t, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
		switch mode.Load() {
		case "gzip":
			if r.Header.Get("Accept-Encoding") != "gzip" {
				t.Errorf("Accept-Encoding %q; want gzip", r.Header.Get("Accept-Encoding"))
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fmt.Fprintf(zw, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"zipped"}]}}`, id)
			zw.Close()
			return true
		case "redirect":
			redirected.Add(1)
			if r.URL.RawQuery == "" {
				http.Redirect(w, r, r.URL.Path+"?moved=1", http.StatusTemporaryRedirect)
				return true
			}
		}
		return false
	})
	_ = wv
	mode.Store("gzip")
	res, err := callEcho(t, h)
	if err != nil || text(res) != "zipped" {
		t.Fatalf("gzip answer: %v, %v", res, err)
	}
	mode.Store("redirect")
	res, err = callEcho(t, h)
	if err != nil || text(res) != "x" {
		t.Fatalf("redirected call: %v, %v", res, err)
	}
	// The pool's request (redirected), then the Transport's: the same
	// (redirected) and the one it followed. The pool does not send a
	// redirected request again itself.
	if n := redirected.Load(); n != 3 {
		t.Errorf("the vendor got %d tools/call requests for one redirected call; want 3", n)
	}
}

// The pool dials with the Transport's dialer (toolhub's outbound policy)
// and is not used where the Transport would go through a proxy or dial
// TLS itself.
func TestNewH1Pool(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	}))
	defer ts.Close()
	u, _ := url.Parse(ts.URL + "/mcp")
	var dials atomic.Int64
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	p := newH1Pool(tr, u)
	if p == nil {
		t.Fatal("no pool for a plain Transport")
	}
	defer p.close()
	for range 2 {
		resp, err := p.post(t.Context(), nil, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("two requests dialled %d times through the Transport's dialer; want 1", n)
	}

	proxied := &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.invalid:3128") }}
	tlsDial := &http.Transport{DialTLSContext: func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("no") }}
	for name, tr := range map[string]*http.Transport{"nil": nil, "proxy": proxied, "tls dialer": tlsDial, "no keep-alive": {DisableKeepAlives: true}} {
		if newH1Pool(tr, u) != nil {
			t.Errorf("%s: a pool where the Transport must send", name)
		}
	}
}

// Where the vendor is reached through a tracing or other wrapping
// RoundTripper, calls keep going through it.
func TestH1PoolNotUnderWrappedTransport(t *testing.T) {
	wv := newWireVendor(t, newMCPServer())
	var seen atomic.Int64
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	h := h1Harness(t, wv.ts.URL, &Options{HTTPClient: hc})
	if h.fastConn(t).h1 != nil {
		t.Fatal("a pool under a wrapping RoundTripper")
	}
	before := seen.Load()
	if _, err := callEcho(t, h); err != nil {
		t.Fatal(err)
	}
	if seen.Load() == before {
		t.Error("the call did not go through the wrapping RoundTripper")
	}
}

// An https:// vendor is called on the pool's own TLS connections, with
// the Transport's TLS settings (here: the test server's certificate), and
// a connection is kept for the next call.
func TestH1PoolTLS(t *testing.T) {
	ct := &connTracker{}
	wv := newWireVendorWith(t, newMCPServer(), func(ts *httptest.Server) {
		toolsCalls(ct, nil)(ts)
		ts.StartTLS()
	})
	tr := wv.ts.Client().Transport.(*http.Transport).Clone()
	h := h1Harness(t, wv.ts.URL, &Options{HTTPClient: &http.Client{Transport: tr}})
	f := h.fastConn(t)
	if f.h1 == nil || f.h1.tls == nil {
		t.Fatal("no TLS pool for an https:// vendor")
	}
	for range 3 {
		if _, err := callEcho(t, h); err != nil {
			t.Fatal(err)
		}
	}
	got := ct.callConns()
	if len(got) != 3 || got[0] != got[1] || got[1] != got[2] {
		t.Errorf("three calls went out on connections %v; want one kept TLS connection", got)
	}
}

// A vendor that sends header lines without end gets the call failed once
// the head passes the Transport's MaxResponseHeaderBytes; the pool does
// not read on (http.ReadResponse alone has no bound).
func TestH1PoolBoundsHead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var sent atomic.Int64
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		_, _ = c.Read(buf) // the request
		line := []byte("X-Pad: " + string(bytes.Repeat([]byte("a"), 1000)) + "\r\n")
		if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\n")); err != nil {
			return
		}
		for sent.Load() < 64<<20 {
			n, err := c.Write(line)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	u, _ := url.Parse("http://" + ln.Addr().String() + "/mcp")
	p := newH1Pool(&http.Transport{MaxResponseHeaderBytes: 64 << 10}, u)
	defer p.close()
	_, err = p.post(ctxTimeout(t, 10*time.Second), nil, []byte(`{}`))
	if !errors.Is(err, errHeadTooLarge) {
		t.Fatalf("endless headers: %v; want %v", err, errHeadTooLarge)
	}
}

// A gzip answer that inflates past MaxResponseBytes fails as too large:
// the bound counts the bytes after decompression, not the few on the
// wire.
func TestH1PoolGzipBomb(t *testing.T) {
	var wire atomic.Int64
	wv := newWireVendorWith(t, newMCPServer(), toolsCalls(&connTracker{}, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		fmt.Fprintf(zw, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, id, bytes.Repeat([]byte("x"), 16<<20))
		zw.Close()
		wire.Store(int64(zb.Len()))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(zb.Bytes())
		return true
	}))
	h := h1Harness(t, wv.ts.URL, &Options{MaxResponseBytes: 64 << 10})
	if h.fastConn(t).h1 == nil {
		t.Fatal("no pool")
	}
	_, err := callEcho(t, h)
	if c := hub.CodeOf(err); c != hub.CodeUpstream || !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("16 MiB inflated from %d bytes of gzip: code %q (%v); want upstream_error, ErrResponseTooLarge", wire.Load(), c, err)
	}
}
