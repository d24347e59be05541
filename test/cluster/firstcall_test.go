package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
	"github.com/toolhub/toolhub/internal/x/pgtest"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

// Issue 36, item 2: a vendor's tools are in the catalog a moment before
// its connection takes calls. Calls sent the moment a tool first appears
// must succeed (they wait for the connection being made), and the hub's
// own "connecting" must never count as the vendor's failure: not in its
// breaker, not in its start-up probe.

const firstCallConfig = `addr: 127.0.0.1:0
log_level: info
redis: "redis://{{redis}}/0"
redis_prefix: "{{prefix}}"
postgres: "{{postgres}}"
postgres_schema: {{schema}}
governance:
  retry: {max: 0}
outbound:
  allow: ["{{vendor}}"]
vendors:
  - id: weather-a
    mcp: {transport: http, url: "http://{{vendor}}/weather-a/mcp"}
`

// slowSurface proxies the vendor and widens the window between its tool
// list and the end of the connection's set-up: it says the vendor has
// resources, and holds the hub's resources/list (which the vendor then
// answers "method not found") for hold. Everything else passes as is.
func slowSurface(t *testing.T, vendorAddr string, hold time.Duration) string {
	t.Helper()
	target := &url.URL{Scheme: "http", Host: vendorAddr}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Header.Get("X-Test-Initialize") == "" {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		b = bytes.Replace(b, []byte(`"capabilities":{`), []byte(`"capabilities":{"resources":{},`), 1)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		switch {
		case bytes.Contains(body, []byte(`"method":"initialize"`)):
			r.Header.Set("X-Test-Initialize", "1")
		case bytes.Contains(body, []byte(`"method":"resources/list"`)):
			time.Sleep(hold) // the fault this proxy injects: a slow vendor, not a wait for the test
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestCallsTheMomentAToolAppears(t *testing.T) {
	vaddr, _, _ := serveVendors(t, vendors.WeatherA)
	paddr := slowSurface(t, vaddr, 300*time.Millisecond)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "toolhub.yaml")
	rdb := redistest.Client(t)
	cfg := strings.NewReplacer("{{vendor}}", paddr, "{{redis}}", redistest.Addr(), "{{prefix}}", redistest.Prefix(t, rdb),
		"{{postgres}}", pgtest.DSN(t), "{{schema}}", pgtest.Schema(t)).Replace(firstCallConfig)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	const tool = "weather-a__current_weather"
	// Restarted five times on one Redis and PostgreSQL: the breaker's and
	// the probe's state after each start is the new process's own.
	for round := range 5 {
		h := launchHub(t, fmt.Sprintf("round %d", round+1), cfgPath, filepath.Join(dir, "data"))
		if _, err := h.WaitListening(t.Context(), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		drilltest.WaitFor(t, 30*time.Second, tool+" listed", func() bool { return listed(h, tool) })
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failed []string
		for i := range 3 {
			wg.Go(func() {
				st, body, err := callTool(h.URL(), tool, map[string]any{"city": fmt.Sprintf("first-%d-%d", round, i)})
				if err != nil || st != http.StatusOK {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%d %v %v", st, body["error"], err))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(failed) > 0 {
			t.Errorf("round %d: %d of 3 calls sent as the tool appeared failed: %v", round+1, len(failed), failed)
		}
		gov := governance(t, h, "weather-a")
		if gov.Breaker.Failures != 0 || gov.Breaker.State != "closed" {
			t.Errorf("round %d: weather-a's breaker %+v; the hub's own connecting is not the vendor's failure", round+1, gov.Breaker)
		}
		if gov.Probe != nil && !gov.Probe.OK {
			t.Errorf("round %d: the start-up probe failed: %s", round+1, gov.Probe.Error)
		}
		drilltest.Stop(t, h)
	}
}

// listed reports whether GET /v1/tools lists tool.
func listed(h *drill.Process, tool string) bool {
	resp, err := http.Get(h.URL() + "/v1/tools")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return bytes.Contains(b, []byte(`"`+tool+`"`))
}

type vendorGovernance struct {
	Breaker struct {
		State    string `json:"state"`
		Failures int    `json:"failures"`
	} `json:"breaker"`
	Probe *struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	} `json:"last_probe"`
}

// governance is a vendor's governance in GET /v1/vendors.
func governance(t *testing.T, h *drill.Process, id string) vendorGovernance {
	t.Helper()
	resp, err := http.Get(h.URL() + "/v1/vendors")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Vendors []struct {
			ID         string           `json:"id"`
			Governance vendorGovernance `json:"governance"`
		} `json:"vendors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, v := range body.Vendors {
		if v.ID == id {
			return v.Governance
		}
	}
	t.Fatalf("vendor %s not in /v1/vendors", id)
	return vendorGovernance{}
}
