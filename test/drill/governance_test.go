package drill_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/internal/drill"
)

func uniqueID(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func call(l *drill.Lab, name string) (*hub.Result, error) {
	return l.App.Gateway.Call(context(), &hub.Call{Tenant: "default", Name: name, Arguments: map[string]any{"city": "Oslo"}})
}

func TestHangingVendorTimesOutWithoutLeaks(t *testing.T) {
	l, err := drill.NewLab(t.Context(), drill.LabOptions{Config: `
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    timeout: 150ms
    probe: {disabled: true}
governance: {retry: {max: 1, base: 10ms, cap: 20ms}}
`})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := call(l, "weather-a__current_weather"); err != nil { // warm the connection
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	if err := l.SetMode("weather-a", vendors.ModeHang); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var timeouts atomic.Int64
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := call(l, "weather-a__current_weather"); hub.CodeOf(err) == hub.CodeTimeout {
				timeouts.Add(1)
			}
		}()
	}
	wg.Wait()
	if timeouts.Load() != 20 {
		t.Fatalf("%d of 20 calls to a hanging vendor timed out", timeouts.Load())
	}
	// Hung upstream requests are abandoned; their goroutines must end.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base+5 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after\n%s", base, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
}

// redisProxy forwards to the real Redis until it is cut.
type redisProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newRedisProxy(t *testing.T) *redisProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &redisProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", "127.0.0.1:6379")
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

// cut stops Redis from the hub's point of view: no listener, no connections.
func (p *redisProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestRedisStoppedMidRunCallsKeepFlowing(t *testing.T) {
	proxy := newRedisProxy(t)
	id := uniqueID("w")
	var logs syncBuffer
	l, err := drill.NewLab(t.Context(), drill.LabOptions{
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Config: fmt.Sprintf(`
redis: redis://%s/0
redis_prefix: "test-`+id+`:"
instances: 2
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - id: %s
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    limits: {rps: 1000, burst: 200}
    probe: {disabled: true}
`, proxy.ln.Addr(), id)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	name := id + "__current_weather"
	for i := range 50 {
		if _, err := call(l, name); err != nil {
			t.Fatalf("call %d with Redis up: %v", i, err)
		}
	}
	if strings.Contains(logs.String(), "fallback limits") {
		t.Fatal("fell back while Redis was up")
	}
	proxy.cut()
	for i := range 60 {
		if _, err := call(l, name); err != nil {
			t.Fatalf("call %d with Redis down: %v", i, err)
		}
	}
	if n := strings.Count(logs.String(), "shared limiter unreachable"); n != 1 {
		t.Errorf("the fallback was logged %d times, want once", n)
	}
}

func TestThreeHubsShareOneRedisLimit(t *testing.T) {
	const rate, burst, secs = 100.0, 50, 3
	id := uniqueID("w")
	cfg := fmt.Sprintf(`
redis: redis://127.0.0.1:6379/0
redis_prefix: "test-`+id+`:"
instances: 3
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - id: %s
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    limits: {rps: %v, burst: %d}
    probe: {disabled: true}
governance: {retry: {max: 0}}
`, id, rate, burst)
	var labs []*drill.Lab
	for range 3 {
		l, err := drill.NewLab(t.Context(), drill.LabOptions{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		labs = append(labs, l)
	}
	var admitted, limited, first, last atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(secs * time.Second)
	for _, l := range labs {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) {
					// The limiter decides moments after the call is sent, and
					// before the vendor answers: the send time is the closer
					// clock, so a busy machine's slow answers skew nothing.
					sent := time.Now().UnixNano()
					_, err := call(l, id+"__current_weather")
					switch hub.CodeOf(err) {
					case "":
						admitted.Add(1)
						for f := first.Load(); (f == 0 || sent < f) && !first.CompareAndSwap(f, sent); f = first.Load() {
						}
						for l := last.Load(); sent > l && !last.CompareAndSwap(l, sent); l = last.Load() {
						}
					case hub.CodeRateLimited:
						limited.Add(1)
						// Wait as told, a little at most: the limit stays
						// saturated without burning the cores it runs on.
						time.Sleep(min(max(hub.AsError(err).RetryAfter, time.Millisecond), 10*time.Millisecond))
					default:
						t.Errorf("unexpected error: %v", err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	// The limit admits the burst at once (less the headroom that first
	// attempts leave for retries), then one call per 1/rate: over the span
	// from the first to the last admitted call, that burst + rate·span.
	elapsed := time.Duration(last.Load() - first.Load()).Seconds()
	reserve := limit.Priority{}.Reserve(limit.Rule{Rate: rate, Burst: burst}, 1, limit.Class{})
	want := rate*elapsed + float64(burst-reserve)
	got := float64(admitted.Load())
	t.Logf("3 hubs, one limit of %v/s (burst %d) for %.2fs: admitted %v (expected %.1f, %+.2f%%), refused %d",
		rate, burst, elapsed, got, want, 100*(got-want)/want, limited.Load())
	if got < want*0.98 || got > want*1.02 {
		t.Errorf("admitted %v calls, want %.1f ±2%%", got, want)
	}
}
