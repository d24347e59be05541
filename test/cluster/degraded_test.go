package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/pgledger"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
	"github.com/toolhub/toolhub/internal/x/pgtest"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

// Issue 36, item 1: an instance starts while Redis or PostgreSQL is away
// (a store outage plus a restart must not take its capacity away), serves
// calls on local limits and its write-ahead log, and joins the store when
// it answers: /readyz then says so, and the ledger holds every call
// answered while the store was away.

const degradedConfig = `addr: 127.0.0.1:0
log_level: info
redis: "redis://{{redis}}/0"
redis_prefix: "{{prefix}}"
postgres: "{{postgres}}"
postgres_schema: {{schema}}
require_stores: true
governance:
  retry: {max: 0}
outbound:
  allow: ["{{vendors}}"]
vendors:
  - id: weather-a
    mcp: {transport: http, url: "http://{{vendors}}/weather-a/mcp"}
    probe: {disabled: true}
`

// readyz is a GET /readyz: its status code and the stores it names.
func readyz(t *testing.T, h *drill.Process) (int, map[string]bool) {
	t.Helper()
	resp, err := http.Get(h.URL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Stores []struct {
			Store string `json:"store"`
			Up    bool   `json:"up"`
		} `json:"stores"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	up := map[string]bool{}
	for _, s := range body.Stores {
		up[s.Store] = s.Up
	}
	return resp.StatusCode, up
}

// TestStartWithStoreAway starts a hub with each store away: refused (a
// dead server) and hung (a stopped one: connections are taken, nothing
// is answered). It logs how long after the start the first call was
// answered (issue 36 asks for within 5 s; a test asserts no wall-clock
// time).
func TestStartWithStoreAway(t *testing.T) {
	for _, c := range []struct{ store, how string }{
		{"redis", "refused"}, {"redis", "hung"}, {"postgres", "refused"}, {"postgres", "hung"},
	} {
		t.Run(c.store+"_"+c.how, func(t *testing.T) { startWithStoreAway(t, c.store, c.how == "hung") })
	}
}

func startWithStoreAway(t *testing.T, away string, hung bool) {
	schema := pgtest.Schema(t)
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	redisAddr, dsn := redistest.Addr(), pgtest.DSN(t)
	pgURL, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The store that is away is reached through a proxy, cut (connections
	// are refused, as by a dead server) or hung until the test restores it.
	target := redisAddr
	if away == "postgres" {
		target = pgURL.Host
	}
	proxy, err := drill.NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	if hung {
		proxy.Hang()
	} else {
		proxy.Cut()
	}
	hubDSN := dsn
	if away == "redis" {
		redisAddr = proxy.Addr()
	} else {
		u := *pgURL
		u.Host = proxy.Addr()
		hubDSN = u.String()
	}

	vaddr, _, _ := serveVendors(t, vendors.WeatherA)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "toolhub.yaml")
	cfg := strings.NewReplacer("{{redis}}", redisAddr, "{{prefix}}", prefix, "{{postgres}}", hubDSN,
		"{{schema}}", schema, "{{vendors}}", vaddr).Replace(degradedConfig)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	const tool = "weather-a__current_weather"
	start := time.Now()
	h := launchHub(t, "instance ("+away+" away)", cfgPath, filepath.Join(dir, "data"))
	if _, err := h.WaitListening(t.Context(), 30*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, lastLines(h.Logs(), 30))
	}
	listening := time.Since(start)
	drilltest.WaitFor(t, 30*time.Second, tool+" listed", func() bool { return listed(h, tool) })
	listedAt := time.Since(start)
	st, body, err := callTool(h.URL(), tool, map[string]any{"city": "away-0"})
	if err != nil || st != http.StatusOK {
		t.Fatalf("first call with %s away: %d %v %v", away, st, body, err)
	}
	t.Logf("%s away (hung %v): listening %v after the start, %s listed after %v, first call answered after %v",
		away, hung, listening.Round(time.Millisecond), tool, listedAt.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// Away: calls are answered; /readyz names the store, not ready as
	// require_stores asks.
	const n = 5
	for i := 1; i < n; i++ {
		st, body, err := callTool(h.URL(), "weather-a__current_weather", map[string]any{"city": fmt.Sprintf("away-%d", i)})
		if err != nil || st != http.StatusOK {
			t.Fatalf("call %d with %s away: %d %v %v", i, away, st, body, err)
		}
	}
	if code, up := readyz(t, h); code != http.StatusServiceUnavailable || up[away] {
		t.Errorf("/readyz with %s away: %d, stores %v; want 503 naming %s down", away, code, up, away)
	}

	// Back: joined, used, and the ledger holds every call answered.
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	drilltest.WaitFor(t, 30*time.Second, away+" joined (/readyz)", func() bool {
		code, up := readyz(t, h)
		return code == http.StatusOK && up["redis"] && up["postgres"]
	})
	if away == "redis" {
		groups, err := rdb.XInfoGroups(t.Context(), prefix+"jobs:q").Result()
		if err != nil || len(groups) == 0 {
			t.Errorf("the queue's consumer group is not in Redis after it came back: %v %v", groups, err)
		}
	}
	l, err := pgledger.Open(t.Context(), dsn, &pgledger.Options{Schema: schema, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var calls int
	drilltest.WaitFor(t, 30*time.Second, "every answered call in the ledger", func() bool {
		calls = 0
		err := l.Query(t.Context(), billing.Filter{Vendor: vendors.WeatherA, Kind: billing.KindCall}, func(billing.Event) error {
			calls++
			return nil
		})
		return err == nil && calls >= n
	})
	if calls != n {
		t.Errorf("ledger holds %d call events, want %d (the calls answered while %s was away)", calls, n, away)
	}
}
