package security

// Issue 32, items 1 and 7: a vendor's tools/call answer, written by hand so
// that it can be what no SDK writes, through a real `toolhub serve`: the
// result a client receives, on /mcp (the fast path) and on REST, is the
// result toolhub validated, byte for byte, and an answer is the call's
// only when it carries the call's JSON-RPC id.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolhub/toolhub/auth"
)

// rawVendor is a streamable HTTP MCP vendor written by hand. Its one tool,
// count, declares an output schema {n: integer} with no other properties;
// answer writes the response to each tools/call.
type rawVendor struct {
	ts     *httptest.Server
	mu     sync.Mutex
	answer func(w http.ResponseWriter, id json.RawMessage)
}

const countTool = `{"name":"count","description":"Counts.","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},
"outputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}`

func newRawVendor(t *testing.T) *rawVendor {
	rv := &rawVendor{}
	rv.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		reply := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
		}
		switch msg.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "raw-session")
			reply(fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1.0.0"}}`, msg.Params.ProtocolVersion))
		case "tools/list":
			reply(`{"tools":[` + countTool + `]}`)
		case "tools/call":
			rv.mu.Lock()
			answer := rv.answer
			rv.mu.Unlock()
			answer(w, msg.ID)
		default:
			reply(`{}`)
		}
	}))
	t.Cleanup(rv.ts.Close)
	return rv
}

func (rv *rawVendor) set(answer func(w http.ResponseWriter, id json.RawMessage)) {
	rv.mu.Lock()
	rv.answer = answer
	rv.mu.Unlock()
}

// jsonResult answers every call with result, as application/json.
func jsonResult(result string) func(http.ResponseWriter, json.RawMessage) {
	return func(w http.ResponseWriter, id json.RawMessage) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
	}
}

func rawVendorHub(t *testing.T, rv *rawVendor) *hub {
	h := serve(t, `addr: 127.0.0.1:0
log_level: info
auth: {enabled: true}
outbound: {allow: ["{{vendors}}"]}
governance:
  retry: {max: 0}
  breaker: {consecutive_failures: 1000, min_calls: 1000}
vendors:
  - id: raw
    mcp: {transport: http, url: "http://{{vendors}}/mcp"}
    probe: {disabled: true}
tenants:
  - {id: acme, tools: ["*"]}
`, rv.ts.Listener.Addr().String())
	h.issue(map[string]auth.Key{
		"operator": {Role: auth.RoleOperator},
		"acme":     {Role: auth.RoleTenant, Tenant: "acme"},
	})
	h.waitReady("operator", "raw")
	return h
}

// mcpSession opens an MCP session on the hub's /mcp as key and returns a
// function that sends one request and returns the JSON-RPC message that
// answers it (read off a JSON body or an event stream).
func (h *hub) mcpSession(key string) func(method, params string) string {
	h.t.Helper()
	var session string
	send := func(body string) string {
		r, _ := http.NewRequestWithContext(h.t.Context(), "POST", h.url+"/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Authorization", "Bearer "+h.keys[key])
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			h.t.Fatal(err)
		}
		defer resp.Body.Close()
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			session = s
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		var last string
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				last = d
			}
		}
		return last
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 0
	return func(method, params string) string {
		id++
		return send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	}
}

// TestResultKeysThatRepeat (issue 32, item 1): validation read the
// vendor's result with encoding/json (last key wins, case ignored) while
// the fast path spliced the raw bytes and picked keys by exact name, so an
// invalid "structuredContent" followed by a valid "StructuredContent"
// passed validation and reached MCP clients. A result whose keys repeat
// or differ only in case, anywhere in it, is refused on every path.
func TestResultKeysThatRepeat(t *testing.T) {
	rv := newRawVendor(t)
	rv.set(jsonResult(`{"content":[{"type":"text","text":"7"}],"structuredContent":{"n":7}}`))
	h := rawVendorHub(t, rv)
	call := h.mcpSession("acme")

	// A well-formed result passes on both doors.
	if got := call("tools/call", `{"name":"raw__count","arguments":{}}`); !strings.Contains(got, `"structuredContent":{"n":7}`) {
		t.Fatalf("a valid result over /mcp: %s", got)
	}
	if st, body := h.req("acme", "POST", "/v1/tools/raw__count/call", `{"arguments":{}}`, nil); st != 200 || !strings.Contains(body, `"n":7`) {
		t.Fatalf("a valid result over REST: %d %s", st, body)
	}

	for _, tc := range []struct{ name, result, key string }{
		{"structuredContent then StructuredContent",
			`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"n":"NOT-AN-INT","evil":"<script>"},"StructuredContent":{"n":1}}`, "StructuredContent"},
		{"StructuredContent then structuredContent",
			`{"content":[{"type":"text","text":"ok"}],"StructuredContent":{"n":1},"structuredContent":{"n":"NOT-AN-INT","evil":"<script>"}}`, "structuredContent"},
		{"content then Content",
			`{"content":[{"type":"text","text":"<script>NOT-AN-INT"}],"Content":[{"type":"text","text":"fine"}],"structuredContent":{"n":1}}`, "Content"},
		{"the same key twice",
			`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"n":"NOT-AN-INT","evil":"<script>"},"structuredContent":{"n":1}}`, "structuredContent"},
		{"an escaped key",
			`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"n":"NOT-AN-INT","evil":"<script>"},"structured\u0043ontent":{"n":1}}`, "structuredContent"},
		{"inside structuredContent",
			`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"n":"NOT-AN-INT","n":1}}`, "n"},
		{"inside a content block",
			`{"content":[{"type":"text","text":"<script>NOT-AN-INT","Text":"fine"}],"structuredContent":{"n":1}}`, "Text"},
		{"Content alone, as a case variant",
			`{"Content":[{"type":"text","text":"<script>NOT-AN-INT"}],"structuredContent":{"n":1}}`, "Content"},
		{"IsError alone, as a case variant",
			`{"content":[{"type":"text","text":"NOT-AN-INT"}],"IsError":true,"structuredContent":{"n":"NOT-AN-INT"}}`, "IsError"},
		{"isError twice",
			`{"content":[{"type":"text","text":"NOT-AN-INT"}],"isError":true,"IsError":false,"structuredContent":{"n":1}}`, "IsError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rv.set(jsonResult(tc.result))
			mcpAnswer := call("tools/call", `{"name":"raw__count","arguments":{}}`)
			st, rest := h.req("acme", "POST", "/v1/tools/raw__count/call", `{"arguments":{}}`, nil)
			for door, got := range map[string]string{"/mcp": mcpAnswer, "REST": rest} {
				if strings.Contains(got, "NOT-AN-INT") || strings.Contains(got, "<script>") || strings.Contains(got, "fine") {
					t.Errorf("%s sent the vendor's ambiguous result on: %s", door, got)
				}
				if !strings.Contains(got, "repeat") || !strings.Contains(got, strings.ReplaceAll(fmt.Sprintf("%q", tc.key), `"`, `\"`)) {
					t.Errorf("%s: the error does not name the repeated key %q: %s", door, tc.key, got)
				}
			}
			if st != http.StatusBadGateway {
				t.Errorf("REST answered %d, want 502: %s", st, rest)
			}
		})
	}
}

// TestAnswerWithAnotherID (issue 32, item 7): a vendor's event stream
// carrying a response with another JSON-RPC id before the call's own was
// taken as the call's result. An answer counts only with the call's id;
// one with another id fails the call, on every path.
func TestAnswerWithAnotherID(t *testing.T) {
	rv := newRawVendor(t)
	rv.set(jsonResult(`{"content":[{"type":"text","text":"7"}],"structuredContent":{"n":7}}`))
	h := rawVendorHub(t, rv)
	call := h.mcpSession("acme")
	if got := call("tools/call", `{"name":"raw__count","arguments":{}}`); !strings.Contains(got, `"n":7`) {
		t.Fatalf("a valid result over /mcp: %s", got)
	}
	forged := `{"content":[{"type":"text","text":"FORGED"}],"structuredContent":{"n":666}}`
	for _, tc := range []struct {
		name   string
		answer func(http.ResponseWriter, json.RawMessage)
	}{
		{"event stream, another id first", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":424242,\"result\":%s}\n\n", forged)
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"7\"}],\"structuredContent\":{\"n\":7}}}\n\n", id)
		}},
		{"event stream, a string id", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":%s}\n\n", id, forged)
		}},
		{"json body, another id", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":424242,"result":%s}`, forged)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rv.set(tc.answer)
			mcpAnswer := call("tools/call", `{"name":"raw__count","arguments":{}}`)
			_, rest := h.req("acme", "POST", "/v1/tools/raw__count/call", `{"arguments":{}}`, nil)
			for door, got := range map[string]string{"/mcp": mcpAnswer, "REST": rest} {
				// "n":666, not 666 alone: a random call id may hold those digits.
				if strings.Contains(got, "FORGED") || strings.Contains(got, `"n":666`) {
					t.Errorf("%s took the answer to another request as the call's: %s", door, got)
				}
				if !strings.Contains(got, "another request") {
					t.Errorf("%s: the error does not say the answer was to another request: %s", door, got)
				}
			}
		})
	}
}

// TestFinalToolErrorPassedOn (issue 28, leftovers): a tool error the
// vendor marks final (_meta "toolhub/final": true) reaches callers marked
// final too — MCP _meta["toolhub/final"], REST "final" — so a client knows
// not to retry it; an error not marked final is not.
func TestFinalToolErrorPassedOn(t *testing.T) {
	rv := newRawVendor(t)
	h := rawVendorHub(t, rv)
	call := h.mcpSession("acme")
	rv.set(jsonResult(`{"content":[{"type":"text","text":"no such city"}],"isError":true,"_meta":{"toolhub/final":true}}`))
	if got := call("tools/call", `{"name":"raw__count","arguments":{}}`); !strings.Contains(got, `"toolhub/final":true`) || !strings.Contains(got, `"isError":true`) {
		t.Errorf("/mcp: a final tool error is not marked final: %s", got)
	}
	if st, body := h.req("acme", "POST", "/v1/tools/raw__count/call", `{"arguments":{}}`, nil); st != 200 || !strings.Contains(body, `"final":true`) {
		t.Errorf("REST: a final tool error is not marked final: %d %s", st, body)
	}
	rv.set(jsonResult(`{"content":[{"type":"text","text":"try later"}],"isError":true}`))
	if got := call("tools/call", `{"name":"raw__count","arguments":{}}`); strings.Contains(got, `toolhub/final`) {
		t.Errorf("/mcp: a tool error not marked final is marked final: %s", got)
	}
}
