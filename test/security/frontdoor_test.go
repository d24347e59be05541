package security

// The front door attacked from outside a real `toolhub serve` process (the
// binary TestMain builds): a web page the operator opens, a slow or idle
// client, and tenant keys reaching for what is not theirs. Each test names
// the defect of issue 12 it guards against; docs/security.md lists them.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/auth/sqlitekeys"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

var toolhubBin string

func TestMain(m *testing.M) { os.Exit(drilltest.Run(m, "../..", &toolhubBin)) }

// hub is one `toolhub serve` child process.
type hub struct {
	t    *testing.T
	p    *drill.Process
	url  string
	data string
	keys map[string]string // name → token
	ids  map[string]string // name → key id
}

// serve starts toolhub on config (with {{vendors}} replaced by the
// example vendors' host:port, "" for none) and waits until it listens.
func serve(t *testing.T, config, vendorsAddr string) *hub {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolhub.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(config, "{{vendors}}", vendorsAddr)), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &hub{t: t, data: filepath.Join(dir, "data"), keys: map[string]string{}, ids: map[string]string{}}
	p, err := drill.StartProcess(drill.ProcessOptions{Binary: toolhubBin, Config: cfg, Data: h.data, Env: []string{"HOME=" + dir}})
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	t.Cleanup(func() { drilltest.Stop(t, p) })
	if h.url, err = p.WaitListening(t.Context(), 60*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, p.Tail(30))
	}
	return h
}

// issue makes keys straight in the hub's key store, as `toolhub keys
// create` does.
func (h *hub) issue(keys map[string]auth.Key) {
	h.t.Helper()
	s, err := sqlitekeys.Open(h.t.Context(), filepath.Join(h.data, "keys.db"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer s.Close()
	for name, k := range keys {
		tok, key, err := auth.Issue(h.t.Context(), s, k, time.Hour)
		if err != nil {
			h.t.Fatal(err)
		}
		h.keys[name], h.ids[name] = tok, key.ID
	}
}

// req sends a request: key names a key issued here (or is a token, or ""),
// hdr adds headers (a "Host" entry sets the Host). It returns the status
// and the body.
func (h *hub) req(key, method, path, body string, hdr map[string]string) (int, string) {
	h.t.Helper()
	st, b, _ := h.reqHeader(key, method, path, body, hdr)
	return st, b
}

// reqHeader is req that also returns the answer's headers.
func (h *hub) reqHeader(key, method, path, body string, hdr map[string]string) (int, string, http.Header) {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequestWithContext(h.t.Context(), method, h.url+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	if tok, ok := h.keys[key]; ok {
		r.Header.Set("Authorization", "Bearer "+tok)
	} else if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range hdr {
		if k == "Host" {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// waitReady polls GET /v1/vendors (as key) until every vendor named is ready.
func (h *hub) waitReady(key string, ids ...string) {
	h.t.Helper()
	drilltest.WaitFor(h.t, 60*time.Second, fmt.Sprintf("vendors %v ready", ids), func() bool {
		_, body := h.req(key, "GET", "/v1/vendors", "", nil)
		var vs struct {
			Vendors []struct{ ID, State string } `json:"vendors"`
		}
		_ = json.Unmarshal([]byte(body), &vs)
		n := 0
		for _, v := range vs.Vendors {
			for _, id := range ids {
				if v.ID == id && v.State == "ready" {
					n++
				}
			}
		}
		return n == len(ids)
	})
}

// TestCrossSiteAdmin (issue 12, defect 1, and the admin-surface hardening): with
// authentication off, a page on another site (or a name that resolves to
// loopback: DNS rebinding) cannot change anything, state-changing bodies
// must be JSON, and the API never starts a stdio vendor's command unless
// the config allows it.
func TestCrossSiteAdmin(t *testing.T) {
	h := serve(t, "addr: 127.0.0.1:0\nlog_level: info\n", "")
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	stdio := fmt.Sprintf(`{"mcp":{"transport":"stdio","command":"/bin/sh","args":["-c","touch %s"]}}`, marker)
	post := func(path, ctype string, hdr map[string]string) (int, string) {
		r, _ := http.NewRequestWithContext(t.Context(), "POST", h.url+path, strings.NewReader(stdio))
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		for k, v := range hdr {
			if k == "Host" {
				r.Host = v
			} else {
				r.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct {
		name  string
		ctype string
		hdr   map[string]string
		want  int
		says  string
	}{
		{"a form post from a page (issue 12, defect 1)", "text/plain", map[string]string{"Origin": "http://evil.example"}, 403, "cross-origin"},
		{"JSON from another origin", "application/json", map[string]string{"Origin": "http://evil.example"}, 403, "cross-origin"},
		{"a cross-site fetch", "application/json", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "cross-origin"},
		{"a same-site page on another port", "application/json", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, "cross-origin"},
		{"DNS rebinding", "application/json", map[string]string{"Host": "evil.example:80"}, 403, "loopback"},
		{"a body that is not JSON", "text/plain", nil, 415, "application/json"},
		{"no content type", "", nil, 415, "application/json"},
		{"a stdio vendor by the API", "application/json", nil, 403, "allow_stdio_vendors"},
	} {
		st, body := post("/v1/vendors/evil", tt.ctype, tt.hdr)
		if st != tt.want || !strings.Contains(body, tt.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tt.name, st, body, tt.want, tt.says)
		}
	}
	// Reading is refused too when the Host is not this hub's loopback name
	// (a rebinding page would read keys, audit and reports).
	if st, body := h.req("", "GET", "/v1/vendors", "", map[string]string{"Host": "evil.example"}); st != 403 {
		t.Errorf("GET with a foreign Host: %d %s", st, body)
	}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if st, body := h.req("", "GET", "/v1/vendors", "", map[string]string{"Host": host + ":" + strings.Split(h.url, ":")[2]}); st != 200 {
			t.Errorf("GET with Host %s: %d %s", host, st, body)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a stdio vendor's command ran")
	}
}

// TestStdioVendorsWhenAllowed: admin.allow_stdio_vendors lets an operator
// register a stdio vendor through the API (here toolhub itself, serving
// MCP on stdio).
func TestStdioVendorsWhenAllowed(t *testing.T) {
	h := serve(t, "addr: 127.0.0.1:0\nlog_level: info\nadmin: {allow_stdio_vendors: true}\n", "")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "nested.yaml")
	if err := os.WriteFile(cfg, []byte("addr: 127.0.0.1:0\nlog_level: error\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(map[string]any{"mcp": map[string]any{"transport": "stdio", "command": toolhubBin,
		"args": []string{"serve", "--stdio", "--config", cfg, "--data", filepath.Join(dir, "data")}}})
	if st, body := h.req("", "POST", "/v1/vendors/nested", string(spec), nil); st != 200 || !strings.Contains(body, `"live"`) {
		t.Errorf("an operator registering a stdio vendor with allow_stdio_vendors: %d %s", st, body)
	}
}

// TestA2ABodyLimit (issue 12, defect 4): /a2a reads no more than max_body_bytes,
// whether the body says its length or is chunked.
func TestA2ABodyLimit(t *testing.T) {
	h := serve(t, "addr: 127.0.0.1:0\nlog_level: info\nmax_body_bytes: 65536\n", "")
	big := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t1","metadata":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}}`
	for _, chunked := range []bool{false, true} {
		var rd io.Reader = strings.NewReader(big)
		if chunked {
			rd = io.MultiReader(rd) // no length known: sent chunked
		}
		r, _ := http.NewRequestWithContext(t.Context(), "POST", h.url+"/a2a", rd)
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "65536") {
			t.Errorf("a 1 MiB body to /a2a (chunked %v): %d %.200s, want 413", chunked, resp.StatusCode, b)
		}
	}
	// A body within the limit still works.
	st, body := h.req("", "POST", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t1"}}`, nil)
	if st != 200 || !strings.Contains(body, `"error"`) {
		t.Errorf("a small tasks/get: %d %s", st, body)
	}
}

// TestSlowAndIdleClients (issue 12, defect 11): a body trickled byte by byte and a
// keep-alive connection left idle are cut off by the hub.
func TestSlowAndIdleClients(t *testing.T) {
	h := serve(t, "addr: 127.0.0.1:0\nlog_level: info\nhttp: {read_timeout: 1s, idle_timeout: 1s}\n", "")
	addr := strings.TrimPrefix(h.url, "http://")

	// Trickle: one byte every 50ms of a 2,000-byte body would take 100 s.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const size = 2000
	fmt.Fprintf(c, "POST /v1/tools/x/call HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, size)
	answered := make(chan string, 1)
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(90 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		answered <- line
	}()
	sent := 0
	tick := time.NewTicker(50 * time.Millisecond) // the attacker's pace
	defer tick.Stop()
	var line string
trickle:
	for sent < size {
		select {
		case line = <-answered:
			break trickle
		case <-tick.C:
			if _, err := c.Write([]byte(" ")); err != nil {
				line = <-answered
				break trickle
			}
			sent++
		}
	}
	if sent >= size {
		t.Fatalf("the hub read a trickled body to its end (%d bytes)", sent)
	}
	if line != "" && !strings.Contains(line, "408") {
		t.Errorf("a trickled body was answered %q, want 408 or a closed connection", line)
	}

	// Idle: one request on a keep-alive connection, then silence.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	br := bufio.NewReader(c2)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = c2.SetReadDeadline(time.Now().Add(90 * time.Second))
	_, err = br.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("an idle keep-alive connection was kept open")
	}
	if !errors.Is(err, io.EOF) {
		t.Errorf("idle connection: %v, want closed by the hub (EOF)", err)
	}
}

// authConfig is the hub of the tenant tests: two tenants that see
// different vendors and capabilities.
const authConfig = `addr: 127.0.0.1:0
log_level: info
auth: {enabled: true}
outbound: {allow: ["{{vendors}}"]}
governance:
  retry: {max: 0}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "http://{{vendors}}/weather-a/mcp"}
    probe: {disabled: true}
    timeout: 60s
  - id: maps
    mcp: {transport: http, url: "http://{{vendors}}/maps/mcp"}
    probe: {disabled: true}
capabilities:
  - name: weather.current
    input_schema: {type: object, required: [city], properties: {city: {type: string}}}
    chain: [{tool: weather-a/current_weather}]
  - name: route.plan
    input_schema: {type: object, required: [from, to], properties: {from: {type: string}, to: {type: string}}}
    chain: [{tool: maps/route}]
tenants:
  - {id: acme, tools: ["weather-a__*", "weather.*"]}
  - {id: globex, tools: ["maps__*", "route.*"]}
`

// tenantHub serves the example vendors here (weather-a held by gate when
// closed) and a hub with authentication on, with keys for both tenants,
// an operator and finance.
func tenantHub(t *testing.T) (*hub, map[string]*vendors.Vendor, *drill.Gate) {
	t.Helper()
	return tenantHubWith(t, "")
}

// tenantHubWith is tenantHub with extra top-level config keys appended to
// authConfig.
func tenantHubWith(t *testing.T, extra string) (*hub, map[string]*vendors.Vendor, *drill.Gate) {
	t.Helper()
	g := &drill.Gate{Cancelable: true}
	vs, addr, closeVendors, err := vendors.ServeVendors(map[string]*vendors.Options{
		vendors.WeatherA: {Knobs: vendors.Knobs{Latency: time.Microsecond}, Sleep: g.Sleep},
		vendors.Maps:     nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Open(); closeVendors() })
	h := serve(t, authConfig+extra, addr)
	h.issue(map[string]auth.Key{
		"operator": {Role: auth.RoleOperator},
		"finance":  {Role: auth.RoleFinance},
		"acme":     {Role: auth.RoleTenant, Tenant: "acme"},
		"globex":   {Role: auth.RoleTenant, Tenant: "globex"},
	})
	h.waitReady("operator", "weather-a", "maps")
	return h, vs, g
}

func TestTenantBoundaries(t *testing.T) {
	h, vs, g := tenantHub(t)

	// Issue 12, defect 5: tenant globex resubscribes to acme's running A2A task.
	t.Run("a2a resubscribe", func(t *testing.T) {
		g.Close()
		defer g.Open()
		st, body := h.req("acme", "POST", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{
			"message":{"kind":"message","messageId":"m-acme-1","role":"user","parts":[{"kind":"data","data":{"city":"AcmeSecretCity"}}],
			"metadata":{"skill":"weather-a__current_weather"}},"configuration":{"blocking":false}}}`, nil)
		var sent struct {
			Result struct {
				ID string `json:"id"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(body), &sent); st != 200 || err != nil || sent.Result.ID == "" {
			t.Fatalf("acme's message/send: %d %s", st, body)
		}
		drilltest.WaitFor(t, 30*time.Second, "acme's call held at weather-a", func() bool { return vs[vendors.WeatherA].Counters().InFlight == 1 })
		r, _ := http.NewRequestWithContext(t.Context(), "POST", h.url+"/a2a",
			strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tasks/resubscribe","params":{"id":"`+sent.Result.ID+`"}}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "text/event-stream")
		r.Header.Set("Authorization", "Bearer "+h.keys["globex"])
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		// The first message answers: a task (the leak) or an error.
		first := firstMessage(t, resp)
		if strings.Contains(first, "AcmeSecretCity") || strings.Contains(first, `"result"`) || !strings.Contains(first, `"error"`) {
			t.Errorf("globex resubscribing to acme's task got %s", first)
		}
		// Acme itself may.
		if st, body := h.req("acme", "POST", "/a2a", `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"`+sent.Result.ID+`"}}`, nil); st != 200 || !strings.Contains(body, sent.Result.ID) {
			t.Errorf("acme's tasks/get: %d %s", st, body)
		}
	})

	// Issue 12, defect 16: reserved _meta keys in any case never reach a vendor.
	t.Run("reserved meta keys", func(t *testing.T) {
		st, body := h.req("acme", "POST", "/v1/tools/weather-a__current_weather/call",
			`{"arguments":{"city":"Oslo"},"_meta":{"Toolhub/Idempotency_Key":"forged","TOOLHUB/JOB_ID":"forged","trace":"kept"}}`, nil)
		if st != 200 {
			t.Fatalf("call: %d %s", st, body)
		}
		calls := vs[vendors.WeatherA].Calls()
		last := calls[len(calls)-1]
		for k := range last.Meta {
			if strings.EqualFold(k, "toolhub/idempotency_key") || strings.EqualFold(k, "toolhub/job_id") {
				t.Errorf("weather-a received _meta %q", k)
			}
		}
		if last.Meta["trace"] != "kept" {
			t.Errorf("the caller's own _meta was dropped: %v", last.Meta)
		}
	})

	// Issue 12, defect 14: a tenant sees neither payouts nor vendor costs nor margin.
	t.Run("reports", func(t *testing.T) {
		if st, body := h.req("acme", "GET", "/v1/reports/payout?vendor=weather-a", "", nil); st != 403 {
			t.Errorf("acme reading payouts: %d %.300s", st, body)
		}
		drilltest.WaitFor(t, 30*time.Second, "acme's call in the ledger", func() bool {
			_, body := h.req("finance", "GET", "/v1/reports/export", "", nil)
			return strings.Contains(body, `"subject":"acme"`)
		})
		for _, path := range []string{"/v1/reports/usage?format=csv&group_by=tenant", "/v1/reports/usage?format=json&group_by=tenant,vendor",
			"/v1/reports/usage?format=table", "/v1/reports/export"} {
			_, fin := h.req("finance", "GET", path, "", nil)
			if !strings.Contains(fin, "vendor_cost") {
				t.Errorf("finance's %s lacks vendor_cost: %.300s", path, fin)
			}
			st, body := h.req("acme", "GET", path, "", nil)
			if st != 200 || !strings.Contains(body, "tenant_cost") || strings.Contains(body, "vendor_cost") || strings.Contains(body, "margin") ||
				strings.Contains(body, "vendor_unit_price") {
				t.Errorf("acme's %s: %d %.400s", path, st, body)
			}
		}
	})

	// Issue 12, defect 17: keys that ended stay ended; vendor ids cannot be probed;
	// capabilities follow the tenant's tools.
	t.Run("rotation, vendor ids, capabilities", func(t *testing.T) {
		for _, ttl := range []string{"", "1ns"} {
			st, body := h.req("operator", "POST", "/v1/admin/keys", `{"role":"tenant","tenant":"acme","ttl":"`+ttl+`"}`, nil)
			var k struct {
				Key struct{ ID string } `json:"key"`
			}
			if json.Unmarshal([]byte(body), &k); st != 200 || k.Key.ID == "" {
				t.Fatalf("issue: %d %s", st, body)
			}
			if ttl == "" {
				if st, body := h.req("operator", "DELETE", "/v1/admin/keys/"+k.Key.ID, "", nil); st != 200 {
					t.Fatalf("revoke: %d %s", st, body)
				}
			}
			st, body = h.req("operator", "POST", "/v1/admin/keys/"+k.Key.ID+"/rotate", "", nil)
			if st == 200 || strings.Contains(body, "thk_") {
				t.Errorf("rotating a %s key: %d %s", map[string]string{"": "revoked", "1ns": "expired"}[ttl], st, body)
			}
		}

		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
		mcpAs := func(key, vendor string) (int, string) {
			return h.req(key, "POST", "/mcp/vendors/"+vendor, init, map[string]string{"Accept": "application/json, text/event-stream"})
		}
		stUnknown, bodyUnknown := mcpAs("acme", "no-such-vendor")
		stHidden, bodyHidden := mcpAs("acme", "maps")
		if stUnknown != stHidden || stHidden != 404 ||
			strings.ReplaceAll(bodyHidden, "maps", "X") != strings.ReplaceAll(bodyUnknown, "no-such-vendor", "X") {
			t.Errorf("acme probing vendor ids: unknown %d %s; not visible %d %s", stUnknown, bodyUnknown, stHidden, bodyHidden)
		}
		if st, body := mcpAs("globex", "maps"); st != 200 {
			t.Errorf("globex's own vendor: %d %s", st, body)
		}

		caps := func(key string) string {
			st, body := h.req(key, "GET", "/v1/capabilities", "", nil)
			if st != 200 {
				t.Errorf("%s GET /v1/capabilities: %d %s", key, st, body)
			}
			return body
		}
		if b := caps("acme"); !strings.Contains(b, "weather.current") || strings.Contains(b, "route.plan") {
			t.Errorf("acme's capabilities: %s", b)
		}
		if b := caps("operator"); !strings.Contains(b, "weather.current") || !strings.Contains(b, "route.plan") {
			t.Errorf("the operator's capabilities: %s", b)
		}
	})

	// Issue 12, defect 13: an event stream ends when its key is revoked.
	t.Run("events after revoke", func(t *testing.T) {
		st, body := h.req("operator", "POST", "/v1/admin/keys", `{"role":"tenant","tenant":"acme","name":"ws"}`, nil)
		var k struct {
			Token string              `json:"token"`
			Key   struct{ ID string } `json:"key"`
		}
		if json.Unmarshal([]byte(body), &k); st != 200 || k.Token == "" {
			t.Fatalf("issue: %d %s", st, body)
		}
		ws, resp, err := websocket.DefaultDialer.DialContext(t.Context(), "ws"+strings.TrimPrefix(h.url, "http")+"/v1/events",
			http.Header{"Authorization": {"Bearer " + k.Token}})
		if err != nil {
			t.Fatalf("dial: %v %v", err, resp)
		}
		defer ws.Close()
		if st, body := h.req("operator", "DELETE", "/v1/admin/keys/"+k.Key.ID, "", nil); st != 200 {
			t.Fatalf("revoke: %d %s", st, body)
		}
		_ = ws.SetReadDeadline(time.Now().Add(90 * time.Second))
		for {
			_, msg, err := ws.ReadMessage()
			if err == nil {
				continue // events of the stream (none expected; the close is what matters)
			}
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
				t.Errorf("the stream of a revoked key: %v (last message %s), want closed with 1008", err, msg)
			}
			break
		}
	})
}

// TestStreamsEndOnRevoke: an MCP notification stream (GET /mcp) opened
// with a key ends when the key is revoked, as /v1/events does (issue 12, defect 13).
func TestStreamsEndOnRevoke(t *testing.T) {
	h, _, _ := tenantHub(t)
	st, body := h.req("operator", "POST", "/v1/admin/keys", `{"role":"tenant","tenant":"acme","name":"sse"}`, nil)
	var k struct {
		Token string              `json:"token"`
		Key   struct{ ID string } `json:"key"`
	}
	if json.Unmarshal([]byte(body), &k); st != 200 || k.Token == "" {
		t.Fatalf("issue: %d %s", st, body)
	}
	mcpReq := func(method, body, session string) *http.Response {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r, _ := http.NewRequestWithContext(t.Context(), method, h.url+"/mcp", rd)
		r.Header.Set("Authorization", "Bearer "+k.Token)
		r.Header.Set("Accept", "application/json, text/event-stream")
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := mcpReq("POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	stream := mcpReq("GET", "", session)
	defer stream.Body.Close()
	if stream.StatusCode != 200 || !strings.HasPrefix(stream.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /mcp: %d %s", stream.StatusCode, stream.Header)
	}
	if st, body := h.req("operator", "DELETE", "/v1/admin/keys/"+k.Key.ID, "", nil); st != 200 {
		t.Fatalf("revoke: %d %s", st, body)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, stream.Body)
		ended <- err
	}()
	select {
	case <-ended: // the hub ended the stream
	case <-time.After(90 * time.Second):
		t.Fatal("the MCP stream of a revoked key is still open")
	}
}

// firstMessage reads the first JSON-RPC message of an answer, plain JSON
// or the first event of a stream.
func firstMessage(t *testing.T, resp *http.Response) string {
	t.Helper()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			return strings.TrimSpace(d)
		}
	}
	return ""
}
