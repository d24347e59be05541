package security

// Issue 32, item 3: privacy levels and redaction on relayed requests. A
// tenant's data level and a vendor's redact rules held for tools/call, but
// prompts/get arguments, resources/read URIs and completion/complete
// values reached the vendor as the caller wrote them (Gateway.Relay never
// set the call's data level; Redact walked only tool arguments;
// completions bypassed the gateway).

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/auth"
)

const phone = "+1 415 555 0100"

// bodyVendor is an mcp-go vendor (streamable HTTP) with a tool, a prompt,
// a resource template and completions, that keeps every request body.
type bodyVendor struct {
	ts     *httptest.Server
	mu     sync.Mutex
	bodies []string
}

type completer struct{}

func (completer) CompletePromptArgument(context.Context, string, mcp.CompleteArgument, mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{"alice"}}, nil
}

func (completer) CompleteResourceArgument(context.Context, string, mcp.CompleteArgument, mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{"a"}}, nil
}

func newBodyVendor(t *testing.T) *bodyVendor {
	s := server.NewMCPServer("notes", "1.0.0", server.WithToolCapabilities(true), server.WithResourceCapabilities(false, true),
		server.WithPromptCapabilities(true), server.WithCompletions(),
		server.WithPromptCompletionProvider(completer{}), server.WithResourceCompletionProvider(completer{}))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	s.AddPrompt(mcp.NewPrompt("greet", mcp.WithArgument("who")), func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greet", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello "+req.Params.Arguments["who"]))}), nil
	})
	s.AddResourceTemplate(mcp.NewResourceTemplate("notes://{+id}", "note"), func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "note " + req.Params.URI}}, nil
	})
	bv := &bodyVendor{}
	inner := server.NewStreamableHTTPServer(s)
	bv.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			bv.mu.Lock()
			bv.bodies = append(bv.bodies, string(b))
			bv.mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(bv.ts.Close)
	return bv
}

// received reports whether a request the vendor got carried method and s.
func (bv *bodyVendor) received(method, s string) bool {
	bv.mu.Lock()
	defer bv.mu.Unlock()
	for _, b := range bv.bodies {
		if strings.Contains(b, `"method":"`+method+`"`) && strings.Contains(b, s) {
			return true
		}
	}
	return false
}

func TestRelayedRequestsKeepPrivacy(t *testing.T) {
	bv := newBodyVendor(t)
	h := serve(t, `addr: 127.0.0.1:0
log_level: info
auth: {enabled: true}
outbound: {allow: ["{{vendors}}"]}
vendors:
  - id: notes
    mcp: {transport: http, url: "http://{{vendors}}/mcp"}
    probe: {disabled: true}
    max_data_level: 0
    redact: [phone]
tenants:
  - {id: acme, tools: ["*"]}
  - {id: clinic, tools: ["*"], data_level: 2}
  - {id: globex, tools: ["other__*"]}
`, bv.ts.Listener.Addr().String())
	h.issue(map[string]auth.Key{
		"operator": {Role: auth.RoleOperator},
		"acme":     {Role: auth.RoleTenant, Tenant: "acme"},
		"clinic":   {Role: auth.RoleTenant, Tenant: "clinic"},
		"globex":   {Role: auth.RoleTenant, Tenant: "globex"},
	})
	h.waitReady("operator", "notes")

	requests := []struct{ method, params, marker string }{
		{"tools/call", `{"name":"notes__echo","arguments":{"text":"T1 ` + phone + `"}}`, "T1"},
		{"prompts/get", `{"name":"notes__greet","arguments":{"who":"P1 ` + phone + `"}}`, "P1"},
		{"resources/read", `{"uri":"toolhub://notes/notes://RX-14155550100"}`, "RX"},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"notes__greet"},"argument":{"name":"who","value":"C1 ` + phone + `"}}`, "C1"},
	}

	// clinic's data is L2 by default: none of it reaches an L0 vendor.
	t.Run("data level", func(t *testing.T) {
		call := h.mcpSession("clinic")
		for _, r := range requests {
			got := call(r.method, strings.ReplaceAll(r.params, r.marker, r.marker+"clinic"))
			if bv.received(r.method, r.marker+"clinic") {
				t.Errorf("%s: clinic's L2 request reached an L0 vendor", r.method)
			}
			if !strings.Contains(got, "L2") {
				t.Errorf("%s: clinic's answer does not say why it was refused: %s", r.method, got)
			}
		}
	})

	// acme's data is L0: it reaches the vendor, with phone numbers masked.
	t.Run("redaction", func(t *testing.T) {
		call := h.mcpSession("acme")
		for _, r := range requests {
			got := call(r.method, r.params)
			if strings.Contains(got, `"error"`) {
				t.Errorf("%s: acme's request failed: %s", r.method, got)
			}
			if !bv.received(r.method, r.marker) {
				t.Errorf("%s: acme's request did not reach the vendor: %s", r.method, got)
				continue
			}
			if bv.received(r.method, "555 0100") || bv.received(r.method, "14155550100") {
				t.Errorf("%s: the vendor received a phone number its redact rules mask", r.method)
			}
			if !bv.received(r.method, "[redacted:phone]") && !bv.received(r.method, "%5Bredacted:phone%5D") {
				t.Errorf("%s: the vendor did not receive the masked value", r.method)
			}
		}
	})

	// Issue 32, item 6: a vendor the tenant cannot see answered "no vendor
	// … for this tenant" where an unknown one answered "resource not
	// found": vendor ids were enumerable. Both answer alike.
	t.Run("hidden vendors", func(t *testing.T) {
		call := h.mcpSession("globex")
		for _, r := range []struct{ method, hidden, unknown string }{
			{"resources/read", `{"uri":"toolhub://notes/notes://a"}`, `{"uri":"toolhub://nosuch/notes://a"}`},
			{"prompts/get", `{"name":"notes__greet","arguments":{}}`, `{"name":"nosuch__greet","arguments":{}}`},
			{"completion/complete", `{"ref":{"type":"ref/prompt","name":"notes__greet"},"argument":{"name":"who","value":"a"}}`,
				`{"ref":{"type":"ref/prompt","name":"nosuch__greet"},"argument":{"name":"who","value":"a"}}`},
			{"resources/subscribe", `{"uri":"toolhub://notes/notes://a"}`, `{"uri":"toolhub://nosuch/notes://a"}`},
		} {
			hidden := call(r.method, r.hidden)
			unknown := strings.ReplaceAll(call(r.method, r.unknown), "nosuch", "notes")
			// The JSON-RPC ids differ by one.
			hidden, unknown = dropID(hidden), dropID(unknown)
			if hidden != unknown {
				t.Errorf("%s: a hidden vendor answers\n%s\nan unknown one\n%s", r.method, hidden, unknown)
			}
		}
	})
}

func dropID(msg string) string {
	var m map[string]any
	if json.Unmarshal([]byte(msg), &m) != nil {
		return msg
	}
	delete(m, "id")
	b, _ := json.Marshal(m)
	return string(b)
}
