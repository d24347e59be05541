package security

// MCP sessions attacked from outside a real `toolhub serve` (issue 32,
// item 4): 40,000 initialize requests with one tenant key took the hub
// from 79 to 835 MB, and nothing ever ended a session its client left.

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

const sessionsConfig = `addr: 127.0.0.1:0
log_level: info
auth: {enabled: true}
tenants:
  - {id: acme, tools: ["*"]}
`

const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// sessionHub serves sessionsConfig with extra appended, with two tenant
// keys of acme and an operator key.
func sessionHub(t *testing.T, extra string) *hub {
	h := serve(t, sessionsConfig+extra, "")
	h.issue(map[string]auth.Key{
		"operator": {Role: auth.RoleOperator},
		"acme1":    {Role: auth.RoleTenant, Tenant: "acme"},
		"acme2":    {Role: auth.RoleTenant, Tenant: "acme"},
	})
	return h
}

// initialize opens an MCP session as key; it returns the status, the
// session id and the body.
func (h *hub) initialize(key string) (int, string, string) {
	h.t.Helper()
	st, body, hdr := h.reqHeader(key, "POST", "/mcp", mcpInit, map[string]string{"Accept": "application/json, text/event-stream"})
	return st, hdr.Get("Mcp-Session-Id"), body
}

// metric reads one sample of /metrics (name with its labels, as printed).
func (h *hub) metric(sample string) float64 {
	h.t.Helper()
	_, body := h.req("operator", "GET", "/metrics", "", nil)
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

func TestMCPSessionCaps(t *testing.T) {
	h := sessionHub(t, "mcp: {max_sessions_per_key: 3, max_sessions: 5}\n")
	var acme1 []string
	for range 3 {
		st, sid, body := h.initialize("acme1")
		if st != 200 || sid == "" {
			t.Fatalf("acme1's initialize: %d %q %s", st, sid, body)
		}
		acme1 = append(acme1, sid)
	}
	if st, _, body := h.initialize("acme1"); st != 429 || !strings.Contains(body, `"rate_limited"`) || !strings.Contains(body, "mcp.max_sessions_per_key") {
		t.Errorf("acme1's fourth initialize: %d %s; want 429 rate_limited naming mcp.max_sessions_per_key", st, body)
	}
	// Another key of the same tenant has its own count, up to the hub's.
	for range 2 {
		if st, sid, body := h.initialize("acme2"); st != 200 || sid == "" {
			t.Fatalf("acme2's initialize: %d %s", st, body)
		}
	}
	if st, _, body := h.initialize("acme2"); st != 503 || !strings.Contains(body, `"overloaded"`) || !strings.Contains(body, "mcp.max_sessions") {
		t.Errorf("an initialize over the hub's sessions: %d %s; want 503 overloaded naming mcp.max_sessions", st, body)
	}
	// A session the client ends makes room.
	if st, body, _ := h.reqHeader("acme1", "DELETE", "/mcp", "", map[string]string{"Mcp-Session-Id": acme1[0]}); st != 200 {
		t.Fatalf("DELETE: %d %s", st, body)
	}
	if st, _, body := h.initialize("acme1"); st != 200 {
		t.Errorf("acme1's initialize after ending one: %d %s", st, body)
	}
	for sample, want := range map[string]float64{
		"toolhub_mcp_sessions_open":                            5,
		`toolhub_mcp_sessions_refused_total{reason="per_key"}`: 1,
		`toolhub_mcp_sessions_refused_total{reason="total"}`:   1,
		"toolhub_mcp_sessions_closed_total":                    1,
		"toolhub_mcp_sessions_expired_total":                   0,
	} {
		if got := h.metric(sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
}

func TestMCPSessionIdleExpiry(t *testing.T) {
	// Idle for a millisecond is idle: the hub's sweep (every second at
	// this timeout) ends the session.
	h := sessionHub(t, "mcp: {session_idle_timeout: 1ms}\n")
	st, sid, body := h.initialize("acme1")
	if st != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", st, body)
	}
	drilltest.WaitFor(t, 30*time.Second, "the idle session ended", func() bool {
		return h.metric("toolhub_mcp_sessions_expired_total") == 1 && h.metric("toolhub_mcp_sessions_open") == 0
	})
	st, body, _ = h.reqHeader("acme1", "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18", "Accept": "application/json, text/event-stream"})
	if st != 404 || !strings.Contains(body, "mcp.session_idle_timeout") || !strings.Contains(body, "initialize again") {
		t.Errorf("a request in the expired session: %d %s; want 404 saying to initialize again", st, body)
	}
	if st, sid2, body := h.initialize("acme1"); st != 200 || sid2 == "" || sid2 == sid {
		t.Errorf("a new initialize: %d %s", st, body)
	}
}
