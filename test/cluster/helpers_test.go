package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
	"github.com/toolhub/toolhub/test/harness"
)

// toolhubBin is the toolhub binary TestMain builds (without -race: it is
// the system under test, not the test).
var toolhubBin string

func TestMain(m *testing.M) {
	os.Exit(drilltest.Run(m, "../..", &toolhubBin))
}

// serveVendors serves the named example vendors on one loopback port,
// each with a gate of its own (a held call finishes after its caller
// died, the way a vendor does when the caller's process is killed).
func serveVendors(t *testing.T, names ...string) (addr string, vs map[string]*vendors.Vendor, gates map[string]*drill.Gate) {
	t.Helper()
	gates = map[string]*drill.Gate{}
	addr, vs = harness.ServeVendors(t, harness.OwnGates(gates), names...)
	return addr, vs, gates
}

// launchHub starts toolhub on data with cfgPath; await waits until it
// listens. Launching several before awaiting any starts them in parallel.
func launchHub(t *testing.T, name, cfgPath, data string) *drill.Process {
	t.Helper()
	return harness.Launch(t, toolhubBin, hubOf(name, cfgPath, data))
}

// hubOf is how this package starts a hub: 30 s waits, and the log without
// its per-call lines.
func hubOf(name, cfgPath, data string, ready ...string) harness.Hub {
	return harness.Hub{Config: cfgPath, Data: data, Name: name, Ready: ready, Wait: 30 * time.Second,
		Log: func(p *drill.Process) string { return lastLines(p.Logs(), 30) }}
}

// await waits until h listens and its vendors are ready.
func await(t *testing.T, h *drill.Process, ready ...string) {
	t.Helper()
	harness.Await(t, h, hubOf(h.Name(), "", "", ready...))
}

// lastLines returns the last n lines of a log, leaving out the per-call lines.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if !strings.Contains(l, `"msg":"call"`) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// balancer is a round-robin reverse proxy with no session affinity: each
// request goes to the next backend. A backend that refuses the connection
// (a dead instance) is skipped: the request never reached it, so sending
// it to the next one is safe. Each answer names the instance that served
// it in X-Toolhub-Instance.
type balancer struct {
	backends []atomic.Pointer[string] // host:port
	next     atomic.Uint64
	served   []atomic.Int64 // requests per backend
	inflight []atomic.Int64 // requests per backend not yet answered in full
	base     http.RoundTripper
	url      string

	mu      sync.Mutex
	tracing bool
	trace   []hop
}

// hop is one request through the balancer, while tracing.
type hop struct {
	backend int
	method  string // HTTP method, then the JSON-RPC method if any
	session string // the request's Mcp-Session-Id
	issued  string // the answer's Mcp-Session-Id
}

func newBalancer(t *testing.T, hubs []*drill.Process) *balancer {
	t.Helper()
	b := &balancer{backends: make([]atomic.Pointer[string], len(hubs)), served: make([]atomic.Int64, len(hubs)),
		inflight: make([]atomic.Int64, len(hubs)),
		base:     &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	for i, h := range hubs {
		b.set(i, h)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "backend" },
		Transport: b,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "balancer: "+err.Error(), http.StatusBadGateway)
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: proxy}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	b.url = "http://" + ln.Addr().String()
	return b
}

// set points backend i at h (a restarted instance listens elsewhere).
func (b *balancer) set(i int, h *drill.Process) {
	a := strings.TrimPrefix(h.URL(), "http://")
	b.backends[i].Store(&a)
}

// RoundTrip sends r to the next backend that accepts the connection.
func (b *balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		r.Body.Close()
	}
	n := uint64(len(b.backends))
	start := b.next.Add(1) - 1
	var err error
	for k := range n {
		i := int((start + k) % n)
		out := r.Clone(r.Context())
		out.URL.Host = *b.backends[i].Load()
		out.Host = out.URL.Host
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		b.inflight[i].Add(1)
		var resp *http.Response
		resp, err = b.base.RoundTrip(out)
		if err != nil {
			b.inflight[i].Add(-1)
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				continue // not reached: try the next backend
			}
			return nil, err
		}
		resp.Body = &countedBody{ReadCloser: resp.Body, n: &b.inflight[i]}
		b.served[i].Add(1)
		b.record(i, r, resp, body)
		resp.Header.Set("X-Toolhub-Instance", strconv.Itoa(i+1))
		return resp, nil
	}
	return nil, fmt.Errorf("no backend accepted the connection: %w", err)
}

// countedBody counts a request as in flight until its answer is read.
type countedBody struct {
	io.ReadCloser
	n    *atomic.Int64
	once sync.Once
}

func (c *countedBody) Close() error {
	c.once.Do(func() { c.n.Add(-1) })
	return c.ReadCloser.Close()
}

func (b *balancer) record(i int, r *http.Request, resp *http.Response, body []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.tracing {
		return
	}
	method := r.Method
	var msg struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
		method += " " + msg.Method
	}
	b.trace = append(b.trace, hop{backend: i, method: method,
		session: r.Header.Get("Mcp-Session-Id"), issued: resp.Header.Get("Mcp-Session-Id")})
}

// startTrace records every request from now; stopTrace returns them.
func (b *balancer) startTrace() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tracing, b.trace = true, nil
}

func (b *balancer) stopTrace() []hop {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tracing = false
	return b.trace
}

func postJSON(url string, body any) (status int, out map[string]any, err error) {
	return harness.PostJSON(url, body)
}

// callTool calls a tool over REST.
func callTool(base, tool string, args map[string]any) (status int, body map[string]any, err error) {
	return harness.CallTool(base, tool, args)
}

// retryAfter reads the retry_after_ms of an error body.
func retryAfter(body map[string]any) time.Duration {
	e, _ := body["error"].(map[string]any)
	ms, _ := e["retry_after_ms"].(float64)
	return time.Duration(ms) * time.Millisecond
}
