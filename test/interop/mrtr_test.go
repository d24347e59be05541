package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/internal/app"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/servers"
)

// mrtrVendor is a 2026-07-28 vendor (mcp-go's server) whose tools ask for
// input the sessionless way (SEP-2322): "confirm" elicits, "write" samples
// and then elicits, "twice" elicits twice (two round trips each). It counts the calls it is sent and
// the calls that carried inputResponses.
type mrtrVendor struct {
	url            string
	calls, answers atomic.Int64
	states         chan string // the requestState of each retry, as received
}

func startMRTRVendor(t *testing.T) *mrtrVendor {
	t.Helper()
	v := &mrtrVendor{states: make(chan string, 64)}
	s := server.NewMCPServer("mrtr-vendor", "1.0.0", server.WithToolCapabilities(true))
	count := func(req mcp.CallToolRequest) {
		v.calls.Add(1)
		if len(req.Params.InputResponses) > 0 {
			v.answers.Add(1)
			select {
			case v.states <- req.Params.RequestState:
			default:
			}
		}
	}
	s.AddTool(mcp.NewTool("confirm", mcp.WithString("what", mcp.Required())), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count(req)
		if a := server.ElicitationResponse(req.Params.InputResponses, "ok"); a != nil {
			return mcp.NewToolResultText(fmt.Sprintf("%s: %s %v", req.GetString("what", ""), a.Action, a.Content)), nil
		}
		return server.NewInputRequestBuilder("asked:"+req.GetString("what", "")).
			Elicit("ok", mcp.ElicitationParams{Message: "Deploy " + req.GetString("what", "") + "?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}).
			ToolResult(), nil
	})
	s.AddTool(mcp.NewTool("write"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count(req)
		if st := req.Params.RequestState; strings.HasPrefix(st, "step2:") {
			if a := server.ElicitationResponse(req.Params.InputResponses, "publish"); a != nil {
				return mcp.NewToolResultText("published " + strings.TrimPrefix(st, "step2:") + " " + string(a.Action)), nil
			}
			return mcp.NewToolResultError("lost the round trip: no answer to publish"), nil
		}
		draft := server.SamplingResponse(req.Params.InputResponses, "draft")
		if draft == nil {
			return server.NewInputRequestBuilder("step1").Sample("draft", mcp.CreateMessageParams{
				Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.TextContent{Type: "text", Text: "write a haiku"}}}, MaxTokens: 50}).ToolResult(), nil
		}
		text := ""
		switch c := draft.Content.(type) {
		case mcp.TextContent:
			text = c.Text
		case map[string]any: // as an input response decodes it
			text, _ = c["text"].(string)
		}
		if req.Params.RequestState != "step1" {
			return mcp.NewToolResultError("lost the round trip: state " + req.Params.RequestState), nil
		}
		// The second round trip carries the draft along in the state.
		return server.NewInputRequestBuilder("step2:"+text).
			Elicit("publish", mcp.ElicitationParams{Message: "Publish " + text + "?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}).
			ToolResult(), nil
	})
	s.AddTool(mcp.NewTool("twice"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count(req)
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		switch st := req.Params.RequestState; {
		case st == "":
			return server.NewInputRequestBuilder("one").Elicit("first", mcp.ElicitationParams{Message: "first?", RequestedSchema: schema}).ToolResult(), nil
		case st == "one" && server.ElicitationResponse(req.Params.InputResponses, "first") != nil:
			return server.NewInputRequestBuilder("two").Elicit("second", mcp.ElicitationParams{Message: "second?", RequestedSchema: schema}).ToolResult(), nil
		case st == "two" && server.ElicitationResponse(req.Params.InputResponses, "second") != nil:
			return mcp.NewToolResultText("asked twice"), nil
		}
		return mcp.NewToolResultError("lost the round trip: state " + req.Params.RequestState), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	v.url = ts.URL + "/mcp"
	return v
}

// startMRTRHub runs toolhub with the vendor as "mv", speaking protocol
// upstream ("" for toolhub's default).
func startMRTRHub(t *testing.T, v *mrtrVendor, protocol string, extra ...string) (*app.App, string) {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
addr: 127.0.0.1:0
data: %s
outbound: {allow: ["127.0.0.1"]}
vendors:
  - id: mv
    mcp: {transport: http, url: %q}
    %s
`, t.TempDir(), v.url, strings.Join(extra, "\n    "))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, &app.Options{MCPProtocol: protocol})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done; a.Close() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := a.Manager.Status("mv")
		if st.State == servers.StateReady && st.Tools == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("vendor mv not ready: %+v", st)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not timing
	}
	return a, "http://" + ln.Addr().String()
}

// answering is an MCP client's sampling and elicitation handlers.
type answering struct{ samples, elicits atomic.Int64 }

func (h *answering) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	h.samples.Add(1)
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.TextContent{Type: "text", Text: "old pond"}}, Model: "m"}, nil
}

func (h *answering) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	h.elicits.Add(1)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"ok": true}}}, nil
}

// mcpClient connects an mcp-go client speaking protocol ("" for its
// newest, 2026-07-28) with sampling and elicitation handlers.
func mcpClient(t *testing.T, url, protocol string, h *answering) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	opts := []client.ClientOption{client.WithSamplingHandler(h), client.WithElicitationHandler(h)}
	if protocol != "" {
		opts = append(opts, client.WithProtocolVersion(protocol))
	}
	c := client.NewClient(tr, opts...)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "mrtr-test", Version: "1"}
	init.Params.Capabilities.Sampling = &mcp.SamplingCapability{}
	init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if want := protocol; want != "" && res.ProtocolVersion != want {
		t.Fatalf("client speaks %s, want %s", res.ProtocolVersion, want)
	}
	return c
}

func callText(t *testing.T, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError || res.NeedsInput() {
		t.Fatalf("%s: %+v", name, res)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestMultiRoundTripThroughHub: a 2026-07-28 vendor asks for input with
// input_required results; through toolhub (its default upstream revision
// and 2026-07-28 pinned), on /mcp/vendors/mv and /mcp, a 2026-07-28 client
// gets the requests and calls again with its answers (mcp-go's client
// drives the round trips), and a 2025-11-25 client gets them as
// sampling/createMessage and elicitation/create requests (mcp-go's server
// bridges). Each round trip reaches the vendor as a call of its own, with
// the vendor's requestState back as it gave it, and is metered.
func TestMultiRoundTripThroughHub(t *testing.T) {
	for _, upstream := range []string{"", mcp.ProtocolVersion20260728} {
		v := startMRTRVendor(t)
		a, base := startMRTRHub(t, v, upstream)
		modern := mcp.IsModernProtocol(a.Manager.Status("mv").Protocol)
		if modern != (upstream != "") {
			t.Fatalf("toolhub speaks %s to the vendor", a.Manager.Status("mv").Protocol)
		}
		clients := []string{mcp.ProtocolVersion20251125}
		if modern {
			// On toolhub's default upstream revision (2025-11-25) the
			// vendor's mcp-go sends its requests as server→client
			// requests, which toolhub relays to clients of that revision.
			clients = append(clients, "")
		}
		for _, client := range clients {
			for _, ep := range []struct{ path, prefix string }{{"/mcp/vendors/mv", ""}, {"/mcp", "mv__"}} {
				name := fmt.Sprintf("up=%s/client=%s%s", upstream, client, ep.path)
				t.Run(name, func(t *testing.T) {
					h := &answering{}
					c := mcpClient(t, base+ep.path, client, h)
					calls, answers := v.calls.Load(), v.answers.Load()
					if got := callText(t, c, ep.prefix+"confirm", map[string]any{"what": "prod"}); got != "prod: accept map[ok:true]" {
						t.Errorf("confirm: %q", got)
					}
					if got := <-v.states; got != "asked:prod" {
						t.Errorf("the vendor got requestState %q back, want its own %q", got, "asked:prod")
					}
					if got := callText(t, c, ep.prefix+"twice", nil); got != "asked twice" {
						t.Errorf("twice: %q", got)
					}
					<-v.states
					<-v.states
					wantCalls, wantSamples := int64(5), int64(0)
					if client == "" {
						// mcp-go's legacy client hangs on a sampling
						// request during a call even directly (v1.2.1):
						// sampling of a client of that revision is the
						// conformance suite's (tools-call-sampling).
						if got := callText(t, c, ep.prefix+"write", nil); got != "published old pond accept" {
							t.Errorf("write: %q", got)
						}
						<-v.states
						<-v.states
						wantCalls, wantSamples = 8, 1
					}
					if h.samples.Load() != wantSamples || h.elicits.Load() != 3+wantSamples {
						t.Errorf("the client answered %d sampling and %d elicitation requests", h.samples.Load(), h.elicits.Load())
					}
					if n, m := v.calls.Load()-calls, v.answers.Load()-answers; n != wantCalls || m != wantCalls-2-wantSamples {
						t.Errorf("the vendor got %d calls, %d with answers; want %d", n, m, wantCalls)
					}
				})
			}
		}
		if err := a.Meter.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		calls := map[string]int{}
		err := a.Ledger.Query(t.Context(), billing.Filter{Vendor: "mv", To: time.Now().Add(time.Hour)}, func(e billing.Event) error {
			if e.Kind == billing.KindCall {
				calls[e.Tool]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Upstream 2026-07-28: 2 clients × 2 endpoints, confirm 2 calls
		// each, twice 3, write 3 for the 2026-07-28 client (every round
		// trip is a call). Upstream 2025-11-25: the round trips are inside
		// the vendor's one call.
		want := map[string]int{"confirm": 2, "twice": 2}
		if modern {
			want = map[string]int{"confirm": 8, "twice": 12, "write": 6}
		}
		if calls["confirm"] != want["confirm"] || calls["twice"] != want["twice"] || calls["write"] != want["write"] {
			t.Errorf("upstream %q: metered calls %v, want %v", upstream, calls, want)
		}
	}
}

// rawModernCall posts one 2026-07-28 tools/call with the given params
// members besides name and _meta, and returns the result's JSON.
func rawModernCall(t *testing.T, url, name string, params map[string]any) map[string]any {
	t.Helper()
	params["name"] = name
	caps := map[string]any{"elicitation": map[string]any{}}
	if c, ok := params["capabilities"]; ok {
		// (toolhub's own fast path takes clients declaring none.)
		caps = c.(map[string]any)
		delete(params, "capabilities")
	}
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "raw", "version": "1"},
		mcp.MetaKeyClientCapabilities: caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range mcp.StandardHeaders(mcp.ProtocolVersion20260728, mcp.MethodToolsCall, json.RawMessage(`{"name":"`+name+`"}`)) {
		req.Header.Set(k, v)
	}
	req.Header.Set(transport.HeaderKeyProtocolVersion, mcp.ProtocolVersion20260728)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if i := bytes.Index(b, []byte("data: ")); i >= 0 {
		b = b[i+len("data: "):] // an event stream of one response
	}
	var out struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &out); err != nil || out.Result == nil {
		t.Fatalf("%s: %d %s (%v)", name, resp.StatusCode, b, err)
	}
	return out.Result
}

// TestMultiRoundTripRetryChecked: the requestState a client gets is
// toolhub's, and a retry must echo one toolhub gave for that vendor's tool;
// its answers are bounded, and redacted by the vendor's rules. A retry
// refused never reaches the vendor.
func TestMultiRoundTripRetryChecked(t *testing.T) {
	v := startMRTRVendor(t)
	_, base := startMRTRHub(t, v, mcp.ProtocolVersion20260728, "redact: [phone]")
	url := base + "/mcp/vendors/mv"
	first := rawModernCall(t, url, "confirm", map[string]any{"arguments": map[string]any{"what": "x"}})
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || first["inputRequests"] == nil || state == "" || strings.Contains(state, "asked:x") {
		t.Fatalf("first call: %v", first)
	}
	// The same through toolhub's front-door fast path (a client that
	// declared no capabilities gets the requests all the same: asking is
	// the vendor's business).
	fast := rawModernCall(t, url, "confirm", map[string]any{"arguments": map[string]any{"what": "x"}, "capabilities": map[string]any{}})
	if fast["resultType"] != "input_required" || fast["requestState"] != state {
		t.Errorf("fast path: %v", fast)
	}
	text := func(r map[string]any) string {
		b, _ := json.Marshal(r["content"])
		return string(b)
	}
	ok := map[string]any{"ok": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}}
	for _, c := range []struct {
		tool, state string
		responses   map[string]any
		want        string
	}{
		{"confirm", "asked:x", ok, "is not one toolhub gave"},
		{"write", state, ok, `was given for tool \"confirm\" of vendor \"mv\"`},
		{"confirm", state, func() map[string]any {
			m := map[string]any{}
			for i := 0; i <= servers.MaxInputRequests; i++ {
				m[fmt.Sprint(i)] = ok["ok"]
			}
			return m
		}(), "inputResponses (toolhub relays at most"},
	} {
		got := rawModernCall(t, url, c.tool, map[string]any{"arguments": map[string]any{"what": "x"}, "inputResponses": c.responses, "requestState": c.state})
		if got["isError"] != true || !strings.Contains(text(got), c.want) {
			t.Errorf("%s with state %.30q: %v, want an error saying %s", c.tool, c.state, got, c.want)
		}
	}
	if n := v.answers.Load(); n != 0 {
		t.Errorf("%d refused retries reached the vendor", n)
	}
	// A 2025-11-25 client that declared neither sampling nor elicitation
	// (toolhub's front-door fast path takes its calls) is told why.
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	legacy := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	if err := legacy.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "bare", Version: "1"}
	if _, err := legacy.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "confirm", map[string]any{"what": "x"}
	res, err := legacy.CallTool(t.Context(), req)
	if err != nil || !res.IsError || res.NeedsInput() || len(res.Content) == 0 || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "declared none of those capabilities") {
		t.Errorf("a client without the capabilities: %+v, %v", res, err)
	}
	// The state toolhub gave goes back to the vendor as the vendor gave
	// it, and the answers under the vendor's redaction rules.
	ok["ok"].(map[string]any)["content"] = map[string]any{"ok": true, "note": "call me on +1 415 555 0100"}
	got := rawModernCall(t, url, "confirm", map[string]any{"arguments": map[string]any{"what": "x"}, "inputResponses": ok, "requestState": state})
	if s := text(got); !strings.Contains(s, "x: accept map[") || strings.Contains(s, "555") || !strings.Contains(s, "ok:true") || <-v.states != "asked:x" {
		t.Errorf("retry: %v", got)
	}
}
