package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
)

// toolhubBin is the toolhub binary TestMain builds (without -race: it is
// the system under test, not the test).
var toolhubBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "toolhub-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	toolhubBin = filepath.Join(dir, "toolhub")
	cmd := exec.Command("go", "build", "-o", toolhubBin, "./cmd/toolhub")
	cmd.Dir = "../.."
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build toolhub:", err)
		return 1
	}
	return m.Run()
}

// gate holds vendor calls (through the vendors' Sleep) while closed. A
// held call ignores its context: it finishes after the caller died, the
// way a vendor does when the caller's process is killed.
type gate struct {
	mu sync.Mutex
	ch chan struct{} // nil: open
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

func (g *gate) sleep(context.Context, time.Duration) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return nil
}

// serveVendors serves the named example vendors on one loopback port,
// each with a gate of its own.
func serveVendors(t *testing.T, names ...string) (addr string, vs map[string]*vendors.Vendor, gates map[string]*gate) {
	t.Helper()
	vs, gates = map[string]*vendors.Vendor{}, map[string]*gate{}
	mux := http.NewServeMux()
	for _, n := range names {
		g := &gate{}
		v, err := vendors.New(n, &vendors.Options{Sleep: g.sleep})
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Mount(mux, "/"+n, vendors.HTTP); err != nil {
			t.Fatal(err)
		}
		vs[n], gates[n] = v, g
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() {
		for _, g := range gates {
			g.open()
		}
		for _, v := range vs {
			v.Close()
		}
		srv.Close()
	})
	return ln.Addr().String(), vs, gates
}

func setKnobs(t *testing.T, v *vendors.Vendor, k vendors.Knobs) {
	t.Helper()
	if err := v.SetKnobs(k); err != nil {
		t.Fatal(err)
	}
}

// hubProc is one `toolhub serve` child process.
type hubProc struct {
	name string
	cmd  *exec.Cmd
	url  string
	addr chan string
	done chan struct{}
	err  error

	mu   sync.Mutex
	logs bytes.Buffer
}

var listening = regexp.MustCompile(`"msg":"toolhub listening","addr":"([^"]+)"`)

// launchHub starts toolhub on data with cfgPath; await waits until it
// listens. Launching several before awaiting any starts them in parallel.
func launchHub(t *testing.T, name, cfgPath, data string) *hubProc {
	t.Helper()
	cmd := exec.Command(toolhubBin, "serve", "--config", cfgPath, "--data", data)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &hubProc{name: name, cmd: cmd, addr: make(chan string, 1), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			h.mu.Lock()
			h.logs.WriteString(line + "\n")
			h.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				h.addr <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
		h.err = cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		h.kill()
		if t.Failed() {
			t.Logf("%s log (without per-call lines):\n%s", h.name, lastLines(h.log(), 30))
		}
	})
	return h
}

// await waits until h listens and its vendors are ready.
func (h *hubProc) await(t *testing.T, ready ...string) {
	t.Helper()
	select {
	case a := <-h.addr:
		h.url = "http://" + a
	case <-h.done:
		t.Fatalf("%s exited before listening: %v\n%s", h.name, h.err, lastLines(h.log(), 30))
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30s", h.name)
	}
	for _, v := range ready {
		waitFor(t, 30*time.Second, h.name+": vendor "+v+" ready", func() bool {
			var vs struct {
				Vendors []struct {
					ID    string `json:"id"`
					State string `json:"state"`
				} `json:"vendors"`
			}
			if getJSON(h.url+"/v1/vendors", &vs) != nil {
				return false
			}
			for _, x := range vs.Vendors {
				if x.ID == v && x.State == "ready" {
					return true
				}
			}
			return false
		})
	}
}

func (h *hubProc) log() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs.String()
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

// kill sends SIGKILL and waits for the process to be gone.
func (h *hubProc) kill() {
	select {
	case <-h.done:
		return
	default:
	}
	syscall.Kill(h.cmd.Process.Pid, syscall.SIGKILL)
	<-h.done
}

// stop asks toolhub to shut down (SIGTERM) and waits for it.
func (h *hubProc) stop(t *testing.T) {
	t.Helper()
	syscall.Kill(h.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-h.done:
		if h.err != nil {
			t.Errorf("%s exited with %v after SIGTERM", h.name, h.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop within 30s of SIGTERM", h.name)
	}
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

func newBalancer(t *testing.T, hubs []*hubProc) *balancer {
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
func (b *balancer) set(i int, h *hubProc) {
	a := strings.TrimPrefix(h.url, "http://")
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

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition
	}
}

var httpClient = &http.Client{Timeout: 60 * time.Second}

func getJSON(url string, v any) error {
	resp, err := httpClient.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func postJSON(url string, body any) (status int, out map[string]any, err error) {
	b, _ := json.Marshal(body)
	resp, err := httpClient.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("POST %s: %s: %q", url, resp.Status, raw)
	}
	return resp.StatusCode, out, nil
}

// callTool calls a tool over REST.
func callTool(base, tool string, args map[string]any) (status int, body map[string]any, err error) {
	return postJSON(base+"/v1/tools/"+tool+"/call", map[string]any{"arguments": args})
}

// retryAfter reads the retry_after_ms of an error body.
func retryAfter(body map[string]any) time.Duration {
	e, _ := body["error"].(map[string]any)
	ms, _ := e["retry_after_ms"].(float64)
	return time.Duration(ms) * time.Millisecond
}
