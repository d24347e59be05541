// Package ops tests what operators wire toolhub into, against a real
// `toolhub serve` built in TestMain: OpenTelemetry traces exported to an
// OTLP collector the test runs, and MCP authorization with OAuth access
// tokens from an issuer the test runs.
package ops

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

var toolhubBin string

func TestMain(m *testing.M) { os.Exit(drilltest.Run(m, "../..", &toolhubBin)) }

// vendorServer serves the example vendor weather-a over streamable HTTP and
// remembers the traceparent header of every POST it receives.
type vendorServer struct {
	url    string
	vendor *vendors.Vendor
	mu     sync.Mutex
	heads  []string
}

func startVendor(t *testing.T) *vendorServer {
	t.Helper()
	v, err := vendors.New(vendors.WeatherA, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	mux := http.NewServeMux()
	if err := v.Mount(mux, "/"+vendors.WeatherA, vendors.HTTP); err != nil {
		t.Fatal(err)
	}
	vs := &vendorServer{vendor: v}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			vs.mu.Lock()
			vs.heads = append(vs.heads, r.Header.Get("traceparent"))
			vs.mu.Unlock()
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	vs.url = srv.URL
	return vs
}

func (vs *vendorServer) traceparents() []string {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return append([]string(nil), vs.heads...)
}

// startHub writes config (with {{vendor}} replaced by the vendor's base
// URL) and runs `toolhub serve` with env added to its environment (and
// every OTEL_* variable of the test's own environment removed).
func startHub(t *testing.T, config string, vs *vendorServer, env ...string) *drill.Process {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolhub.yaml")
	config = strings.ReplaceAll(config, "{{vendor}}", vs.url)
	config = strings.ReplaceAll(config, "{{vendor_host}}", strings.TrimPrefix(vs.url, "http://"))
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OTEL_") {
			name, _, _ := strings.Cut(kv, "=")
			env = append(env, name+"=")
		}
	}
	h, err := drill.StartProcess(drill.ProcessOptions{Binary: toolhubBin, Config: cfg, Data: filepath.Join(dir, "data"), Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drilltest.Stop(t, h) })
	if _, err := h.WaitListening(t.Context(), 60*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, h.Tail(30))
	}
	return h
}
