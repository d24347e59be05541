package security

// End-to-end tests of the guards against a vendor (docs/security.md, "Guards
// against a vendor"), each against a real `toolhub serve` and real MCP
// servers (mcp-go over streamable HTTP) playing the vendor.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

// echoServer is a well-behaved vendor with one tool.
func echoServer(opts ...server.ServerOption) *server.MCPServer {
	s := server.NewMCPServer("testvendor", "1.0.0", append([]server.ServerOption{server.WithToolCapabilities(true)}, opts...)...)
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	return s
}

// vendorHubConfig is a hub with authentication on, allowed to reach the
// given test vendors (host:port) and nothing else on loopback.
func vendorHubConfig(allow ...string) string {
	q := make([]string, len(allow))
	for i, a := range allow {
		q[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`auth: {enabled: true}
outbound: {allow: [%s]}
tenants:
  - {id: acme, tools: ["*"]}
`, strings.Join(q, ", "))
}

var vendorKeys = map[string][]string{
	"operator": {"--role", "operator"},
	"vx":       {"--role", "vendor", "--vendor", "vx"},
}

func mcpSpec(url string) map[string]any {
	return map[string]any{"mcp": map[string]any{"transport": "http", "url": url}}
}

// Issue 12, defect 2: a vendor key put ${SOME_VAR} in mcp.url; the URL was expanded
// from the hub's environment (only headers and env were checked against
// the vendor's own TOOLHUB_VENDOR_<ID>_* prefix) and the hub sent the
// operator's secret to the vendor's host.
func TestVendorURLCannotCarryHubSecrets(t *testing.T) {
	tv := newTestVendor(t, echoServer())
	h := startHub(t, vendorHubConfig(tv.addr()), []string{"HUB_SECRET=hub-secret-7f3a9c", "TOOLHUB_VENDOR_VX_TENANT=vx-own-tenant"}, vendorKeys)
	for _, u := range []string{
		tv.ts.URL + "/mcp?key=${HUB_SECRET}",
		tv.ts.URL + "/${HUB_SECRET}/mcp",
	} {
		st, m := h.register("vx", "vx", mcpSpec(u))
		if st != 403 || !strings.Contains(fmt.Sprint(m), "TOOLHUB_VENDOR_VX_") {
			t.Errorf("a vendor key registered %s: %d %v", u, st, m)
		}
	}
	if tv.saw("hub-secret-7f3a9c") {
		t.Fatal("the hub sent its own secret to the vendor's host")
	}
	// The vendor's own variables may be used in its url (documented).
	st, m := h.register("vx", "vx", mcpSpec(tv.ts.URL+"/mcp?tenant=${TOOLHUB_VENDOR_VX_TENANT}"))
	if st != 200 {
		t.Fatalf("a vendor key referring to its own variable in its url: %d %v", st, m)
	}
	if !tv.saw("vx-own-tenant") {
		t.Error("the vendor's own variable was not expanded in its url")
	}
	_, _, raw := h.do("vx", "GET", "/v1/vendors/vx/versions", nil)
	if strings.Contains(string(raw), "vx-own-tenant") || !strings.Contains(string(raw), "${TOOLHUB_VENDOR_VX_TENANT}") {
		t.Errorf("versions show the value, or lost the reference: %s", raw)
	}
}

// Issue 12, defect 9: a vendor key could set probe.interval: 1ns (a core burned,
// millions of probes logged).
func TestProbeIntervalFloor(t *testing.T) {
	tv := newTestVendor(t, echoServer())
	h := startHub(t, vendorHubConfig(tv.addr()), nil, vendorKeys)
	spec := func(interval string) map[string]any {
		s := mcpSpec(tv.ts.URL + "/mcp")
		s["probe"] = map[string]any{"interval": interval}
		return s
	}
	for _, iv := range []string{"1ns", "50ms", "500ms"} {
		st, m := h.register("vx", "vx", spec(iv))
		if st != 400 || !strings.Contains(fmt.Sprint(m), "probe: interval "+iv+": under the floor") {
			t.Errorf("a vendor key set probe.interval %s: %d %v", iv, st, m)
		}
	}
	if st, m := h.register("vx", "vx", spec("2s")); st != 200 {
		t.Errorf("probe.interval 2s: %d %v", st, m)
	}
	// An operator may go down to the hard floor, not under it.
	if st, m, _ := h.do("operator", "PUT", "/v1/vendors/vx", spec("1ns")); st != 400 || !strings.Contains(fmt.Sprint(m), "under the floor of 100ms") {
		t.Errorf("an operator set probe.interval 1ns: %d %v", st, m)
	}
}

// Issue 12, defect 12: the audit log kept literal secrets in headers it did not
// know (Ocp-Apim-Subscription-Key, X-Access-Key) and any value containing
// ${…} whole. Every header value but an allow-list is a secret, in the
// audit log and every status surface.
func TestHeaderSecretsMaskedEverywhere(t *testing.T) {
	tv := newTestVendor(t, echoServer())
	h := startHub(t, vendorHubConfig(tv.addr()), []string{"TOOLHUB_VENDOR_VX_T=vx-env-4444"}, vendorKeys)
	secrets := []string{"lit-ocp-1111", "lit-xak-2222", "lit-auth-3333", "vx-env-4444"}
	spec := mcpSpec(tv.ts.URL + "/mcp")
	spec["mcp"].(map[string]any)["headers"] = map[string]any{
		"Ocp-Apim-Subscription-Key": "lit-ocp-1111",
		"X-Access-Key":              "lit-xak-2222",
		"Authorization":             "Bearer lit-auth-3333 ${TOOLHUB_VENDOR_VX_T}",
		"Accept":                    "application/json, text/event-stream",
	}
	if st, m, _ := h.do("operator", "POST", "/v1/vendors/vx", spec); st != 200 {
		t.Fatalf("register: %d %v", st, m)
	}
	if !tv.saw("lit-ocp-1111") || !tv.saw("vx-env-4444") {
		t.Fatal("the headers did not reach the vendor; the checks below would prove nothing")
	}
	audit, err := os.ReadFile(filepath.Join(h.dir, "data", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	surfaces := map[string]string{"audit.jsonl": string(audit)}
	for _, p := range []string{"/v1/admin/audit", "/v1/vendors/vx/versions", "/v1/vendors"} {
		_, _, raw := h.do("operator", "GET", p, nil)
		surfaces[p] = string(raw)
	}
	_, _, raw := h.do("vx", "GET", "/v1/vendors/vx/versions", nil)
	surfaces["/v1/vendors/vx/versions (vendor key)"] = string(raw)
	for where, text := range surfaces {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %q", where, s)
			}
		}
	}
	for _, where := range []string{"audit.jsonl", "/v1/vendors/vx/versions"} {
		for _, want := range []string{"${TOOLHUB_VENDOR_VX_T}", "application/json, text/event-stream", "Ocp-Apim-Subscription-Key"} {
			if !strings.Contains(surfaces[where], want) {
				t.Errorf("%s lost %q: %s", where, want, surfaces[where])
			}
		}
	}
}

// Issue 12, defect 15: the SSRF guard let through addresses of the IANA
// special-purpose registries and IPv6 forms of loopback; a DNS failure
// was reported as "forbidden".
//
// Issue 28, leftovers: the hub runs with outbound.loopback_only, so a
// regression of the guard is refused at the dialer (and logged) instead of
// sending traffic off the machine; the test asserts that the guard refused
// each address (403 naming it) and that the sandbox never had to.
func TestSSRFSpecialPurposeAddresses(t *testing.T) {
	tv := newTestVendor(t, echoServer())
	h := startHub(t, strings.Replace(vendorHubConfig(tv.addr()), "outbound: {", "outbound: {loopback_only: true, ", 1), nil, vendorKeys)
	if st, m, _ := h.do("vx", "POST", "/v1/vendors/vx", mcpSpec(tv.ts.URL+"/mcp")); st != 200 {
		t.Fatalf("register: %d %v", st, m)
	}
	for _, u := range []string{
		"http://192.0.0.192/mcp",            // Oracle cloud metadata
		"http://[::127.0.0.1]:9/mcp",        // IPv4-compatible loopback
		"http://[64:ff9b::7f00:1]:9/mcp",    // NAT64 of loopback
		"http://[2002:7f00:1::]:9/mcp",      // 6to4 of loopback
		"http://198.18.0.1/mcp",             // benchmarking
		"http://240.0.0.1/mcp",              // reserved
		"http://[64:ff9b::a9fe:a9fe]/mcp",   // NAT64 of the metadata address
		"http://[::ffff:0:a00:1]/mcp",       // IPv4-translated 10.0.0.1
		"http://100.100.100.200/latest/mcp", // Alibaba metadata
	} {
		st, m, _ := h.do("vx", "PUT", "/v1/vendors/vx", mcpSpec(u))
		if st != 403 || !strings.Contains(fmt.Sprint(m), "refuses") {
			t.Errorf("%s: %d %v; want 403, the guard's refusal", u, st, m)
		}
	}
	defer assertStayedOnLoopback(t, h.p.Logs)
	// A name that does not resolve is not forbidden: nothing was refused.
	st, m, _ := h.do("vx", "PUT", "/v1/vendors/vx", mcpSpec("http://no-such-vendor.invalid/mcp"))
	if st == 403 || code(m) == "forbidden" || !strings.Contains(fmt.Sprint(m), "resolve") {
		t.Errorf("an unresolvable name: %d %v", st, m)
	}
	if tv.count("tools/list") == 0 {
		t.Fatal("the vendor was never reached; the refusals above would prove nothing")
	}
}

// toolsServer is a vendor listing n tools, each with a description of
// descBytes bytes, pageSize to a tools/list page (0: all in one).
func toolsServer(n, descBytes, pageSize int) *server.MCPServer {
	var opts []server.ServerOption
	if pageSize > 0 {
		opts = append(opts, server.WithPaginationLimit(pageSize))
	}
	s := echoServer(opts...)
	desc := strings.Repeat("d", descBytes)
	for i := range n {
		s.AddTool(mcp.NewTool(fmt.Sprintf("t%04d", i), mcp.WithDescription(desc)), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	}
	return s
}

// Issue 12, defect 3: tool descriptions had no size limit (30 pages of one tool each
// with an 8 MiB description took the hub from 134 MB to 1.7 GB; one
// /v1/tools answer was 251 MB). Everything a vendor lists is bounded:
// bytes per description, tools per vendor, catalog bytes per vendor.
func TestVendorCatalogBounded(t *testing.T) {
	big := newTestVendor(t, toolsServer(4, 512<<10, 1))   // 4 pages, each one tool with a 512 KiB description
	wide := newTestVendor(t, toolsServer(300, 15<<10, 0)) // 300 descriptions under the limit, 4.5 MB in all
	many := newTestVendor(t, toolsServer(1001, 10, 0))    // over the tool count
	keys := map[string][]string{"operator": {"--role", "operator"}, "acme": {"--role", "tenant", "--tenant", "acme"}}
	h := startHub(t, vendorHubConfig(big.addr(), wide.addr(), many.addr()), nil, keys)

	st, m := h.register("operator", "big", mcpSpec(big.ts.URL+"/mcp"))
	if st != 200 || fmt.Sprint(m["tools"]) != "[echo]" {
		t.Fatalf("a vendor with oversized descriptions: %d %v", st, m)
	}
	rejected := fmt.Sprint(m["rejected"])
	for i := range 4 {
		if want := fmt.Sprintf("t%04d: description: 524288 bytes, over the 16384-byte limit", i); !strings.Contains(rejected, want) {
			t.Errorf("rejected lacks %q: %s", want, rejected)
		}
	}
	h.waitReady("operator", "big")
	_, _, raw := h.do("acme", "GET", "/v1/tools", nil)
	if len(raw) > 64<<10 || !strings.Contains(string(raw), "big__echo") {
		t.Errorf("GET /v1/tools is %d bytes: %.300s", len(raw), raw)
	}
	if st := h.vendorStatus("operator", "big"); !strings.Contains(fmt.Sprint(st["rejected"]), "over the 16384-byte limit") {
		t.Errorf("GET /v1/vendors does not show the rejected tools: %v", st)
	}

	st, m = h.register("operator", "wide", mcpSpec(wide.ts.URL+"/mcp"))
	if st != 503 || !strings.Contains(fmt.Sprint(m), "over 4194304 bytes") {
		t.Errorf("a vendor over the catalog bytes: %d %.400v", st, m)
	}
	st, m = h.register("operator", "many", mcpSpec(many.ts.URL+"/mcp"))
	if st != 503 || !strings.Contains(fmt.Sprint(m), "over 1000 tools") {
		t.Errorf("a vendor over the tool count: %d %.400v", st, m)
	}
}

// mcpCaller is an MCP client of the hub's /mcp as one tenant, holding a
// subscriptions/listen stream for tool-list changes and counting them.
type mcpCaller struct {
	c       *client.Client
	changes atomic.Int64
	acked   chan struct{}
	once    sync.Once
}

func newMCPCaller(t *testing.T, h *hubProc, key string) *mcpCaller {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(h.url+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + h.keys[key]}))
	if err != nil {
		t.Fatal(err)
	}
	mc := &mcpCaller{c: client.NewClient(tr), acked: make(chan struct{})}
	mc.c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationToolsListChanged:
			mc.changes.Add(1)
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			mc.once.Do(func() { close(mc.acked) })
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); mc.c.Close() })
	if err := mc.c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	go mc.c.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true})
	select {
	case <-mc.acked:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no subscriptions/listen acknowledgement", key)
	}
	return mc
}

// listsTool reports whether the tenant's GET /v1/tools lists name.
func (h *hubProc) listsTool(key, name string) bool {
	_, m, _ := h.do(key, "GET", "/v1/tools", nil)
	return slices.Contains(toolNames(m), name)
}

// Issue 12, defect 8: a vendor flooding notifications/tools/list_changed kept a core
// busy (a tool sync per notification) and sent thousands of notifications
// to tenants who cannot see that vendor. Tool syncs are debounced (one a
// second at most) and a catalog change notifies only the tenants whose
// view changed.
func TestListChangedFloodDebouncedAndScoped(t *testing.T) {
	// The flooding vendor changes its tool list, and says so, every time
	// the hub lists it: as fast as the hub re-lists.
	var flooding atomic.Bool
	var blinkMu sync.Mutex
	blinking := false
	noop := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	var floodSrv *server.MCPServer
	hooks := &server.Hooks{}
	hooks.AddAfterListTools(func(ctx context.Context, id any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if !flooding.Load() {
			return
		}
		go func() {
			blinkMu.Lock()
			defer blinkMu.Unlock()
			if blinking = !blinking; blinking {
				floodSrv.AddTool(mcp.NewTool("blink"), noop)
			} else {
				floodSrv.DeleteTools("blink")
			}
		}()
	})
	floodSrv = echoServer(server.WithHooks(hooks))
	flood := newTestVendor(t, floodSrv)
	calm := newTestVendor(t, echoServer())
	cfg := vendorHubConfig(flood.addr(), calm.addr()) + fmt.Sprintf(`  - {id: globex, tools: ["flood__*"]}
vendors:
  - id: flood
    mcp: {transport: http, url: %q}
    probe: {disabled: true}
  - id: calm
    mcp: {transport: http, url: %q}
    probe: {disabled: true}
`, flood.ts.URL+"/mcp", calm.ts.URL+"/mcp")
	cfg = strings.Replace(cfg, `{id: acme, tools: ["*"]}`, `{id: acme, tools: ["calm__*"]}`, 1)
	keys := map[string][]string{"operator": {"--role", "operator"}, "acme": {"--role", "tenant", "--tenant", "acme"},
		"globex": {"--role", "tenant", "--tenant", "globex"}}
	h := startHub(t, cfg, nil, keys)
	h.waitReady("operator", "flood")
	h.waitReady("operator", "calm")
	acme, globex := newMCPCaller(t, h, "acme"), newMCPCaller(t, h, "globex")
	listsBefore := flood.count("tools/list")

	// Start the loop with one change; watch the hub re-list 4 times.
	start := time.Now()
	flooding.Store(true)
	floodSrv.AddTool(mcp.NewTool("kick"), noop)
	const lists = 4
	drilltest.WaitFor(t, 60*time.Second, "the hub re-listing the flooding vendor", func() bool { return flood.count("tools/list")-listsBefore >= lists })
	elapsed := time.Since(start)
	flooding.Store(false)
	syncs := flood.count("tools/list") - listsBefore
	// One sync at once, then at most one a second (the debounce): a hub
	// that re-lists on every notification makes its 4 syncs in far less.
	if limit := 2 + int(elapsed/time.Second); syncs > limit {
		t.Errorf("%d tool syncs in %v, want at most %d (one a second)", syncs, elapsed.Round(time.Millisecond), limit)
	}

	// The flood ends; globex, who sees the vendor, gets its last list.
	blinkMu.Lock()
	floodSrv.AddTool(mcp.NewTool("final"), noop)
	blinkMu.Unlock()
	drilltest.WaitFor(t, 60*time.Second, "flood__final listed for globex", func() bool { return h.listsTool("globex", "flood__final") })
	st := h.vendorStatus("operator", "flood")
	t.Logf("flood: %d tool syncs in %v; the hub received %v list changes and made %v syncs in all; globex was notified %d times",
		syncs, elapsed.Round(time.Millisecond), st["list_changes"], st["tool_syncs"], globex.changes.Load())

	// A change acme can see: acme hears of it, and of nothing before it.
	calm.srv.AddTool(mcp.NewTool("late"), noop)
	drilltest.WaitFor(t, 60*time.Second, "acme notified of calm's change", func() bool { return acme.changes.Load() >= 1 })
	if n := acme.changes.Load(); n != 1 {
		t.Errorf("acme, who cannot see flood, got %d tools/list_changed notifications, want 1 (calm's change)", n)
	}
	if n := globex.changes.Load(); n == 0 {
		t.Error("globex, who sees flood, was never notified")
	}
}

// Issue 12, defect 19: health probing was blind on modern connections (mcp-go's
// Client.Ping sends nothing on protocol 2026-07-28), so a vendor without
// a business probe was never found dead by probing. The default probe
// must reach the vendor, and find it dead when it stops answering.
func TestDefaultProbeReachesVendor(t *testing.T) {
	tv := newTestVendor(t, echoServer())
	cfg := vendorHubConfig(tv.addr()) + fmt.Sprintf(`vendors:
  - id: quiet
    mcp: {transport: http, url: %q}
    probe: {interval: 200ms}
`, tv.ts.URL+"/mcp")
	h := startHub(t, cfg, nil, map[string][]string{"operator": {"--role", "operator"}})
	h.waitReady("operator", "quiet")
	probes := func() int { return tv.count("server/discover") + tv.count("tools/list") + tv.count("ping") }
	before := probes()
	drilltest.WaitFor(t, 60*time.Second, "probes reaching the vendor", func() bool { return probes() >= before+3 })
	tv.dead.Store(true) // every request hangs from now on
	drilltest.WaitFor(t, 60*time.Second, "the silent vendor ejected by its probes", func() bool {
		gov, _ := h.vendorStatus("operator", "quiet")["governance"].(map[string]any)
		return gov["ejected"] == true
	})
}

// assertStayedOnLoopback fails the test if the hub's outbound sandbox
// (outbound.loopback_only) had to refuse a dial: the guard should have
// refused it first. Refused DNS queries are the sandbox's own doing.
func assertStayedOnLoopback(t *testing.T, logs func() string) {
	t.Helper()
	for line := range strings.SplitSeq(logs(), "\n") {
		if strings.Contains(line, "loopback_only refused") && !strings.Contains(line, `"addr":"dns `) {
			t.Errorf("the guard let a dial through that only the sandbox stopped: %s", line)
		}
	}
}
