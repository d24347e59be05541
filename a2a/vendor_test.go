package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// TestJSAgentThroughGateway registers the @a2a-js/sdk agent as two vendors
// (one whose card streams, one whose card does not) and calls its skills
// through a hub.Gateway.
func TestJSAgentThroughGateway(t *testing.T) {
	t.Parallel() // its own stores, servers and peers
	agent := startJSAgent(t)
	cat := registry.NewCatalog()
	m := NewManager(cat, &Options{Logger: quietLogger(), RefreshInterval: -1})
	t.Cleanup(func() { m.Close() })
	addReady(t, m, a2aSpec("agent", agent.URL+WellKnownCardPath))
	addReady(t, m, a2aSpec("agent-poll", agent.URL+"/nostream"+WellKnownCardPath))
	addReady(t, m, a2aSpec("agent-v03", agent.URL+"/v03"+WellKnownCardPath))

	var names []string
	for _, tl := range cat.Tools() {
		names = append(names, tl.Catalog)
	}
	want := []string{"agent-poll__count", "agent-poll__draw", "agent-poll__echo", "agent-poll__fail", "agent-poll__slow",
		"agent-v03__count", "agent-v03__draw", "agent-v03__echo", "agent-v03__fail", "agent-v03__slow",
		"agent__count", "agent__draw", "agent__echo", "agent__fail", "agent__slow"}
	if d := cmp.Diff(want, names); d != "" {
		t.Fatalf("catalog (-want +got):\n%s", d)
	}
	if st := m.Status("agent"); !st.Streaming || st.Protocol != "1.0" || st.Tools != 5 || st.Agent != "Test Agent" {
		t.Errorf("status = %+v", st)
	}
	if st := m.Status("agent-poll"); st.Streaming {
		t.Errorf("agent-poll streams: %+v", st)
	}
	if st := m.Status("agent-v03"); !isV03(sdk.ProtocolVersion(st.Protocol)) {
		t.Errorf("agent-v03 is not spoken to as 0.3: %+v", st)
	}

	gw := hub.NewGateway(cat, m, &hub.Options{DefaultTimeout: 20 * time.Second})
	call := func(ctx context.Context, name string, args map[string]any) (*hub.Result, error) {
		return gw.Call(ctx, &hub.Call{Tenant: "default", Name: name, Arguments: args})
	}

	for _, v := range []string{"agent", "agent-poll", "agent-v03"} {
		t.Run(v+"/echo", func(t *testing.T) {
			r, err := call(t.Context(), v+"__echo", map[string]any{"text": "hi", "data": map[string]any{"x": 1.0}})
			if err != nil {
				t.Fatal(err)
			}
			wantContent := []mcp.Content{mcp.NewTextContent("echo: hi"), mcp.NewTextContent(`{"echo":{"x":1}}`)}
			if d := cmp.Diff(wantContent, r.Content); d != "" {
				t.Errorf("content (-want +got):\n%s", d)
			}
			if d := cmp.Diff(map[string]any{"echo": map[string]any{"x": 1.0}}, r.Structured); d != "" {
				t.Errorf("structured: %s", d)
			}
			if r.Provenance.Vendor != v || r.Provenance.Tool != "echo" {
				t.Errorf("provenance = %+v", r.Provenance)
			}
		})
		t.Run(v+"/count", func(t *testing.T) {
			r, err := call(t.Context(), v+"__count", map[string]any{"data": map[string]any{"n": 4}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range r.Content {
				got = append(got, c.(mcp.TextContent).Text)
			}
			if d := cmp.Diff([]string{"1", "2", "3", "4"}, got); d != "" {
				t.Errorf("chunks (-want +got):\n%s", d)
			}
		})
		t.Run(v+"/fail", func(t *testing.T) {
			_, err := call(t.Context(), v+"__fail", map[string]any{"text": "x"})
			code, e := errCode(err)
			if code != hub.CodeUpstream || !strings.Contains(e.Message, "failed on purpose") || e.Vendor != v {
				t.Fatalf("err = %v, want upstream_error with the agent's message", err)
			}
		})
		t.Run(v+"/draw", func(t *testing.T) {
			r, err := call(t.Context(), v+"__draw", map[string]any{"text": "a dot"})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Content) != 2 {
				t.Fatalf("content = %#v", r.Content)
			}
			if img, ok := r.Content[0].(mcp.ImageContent); !ok || img.MIMEType != "image/png" || !strings.HasPrefix(img.Data, "iVBOR") {
				t.Errorf("content[0] = %#v, want a PNG image", r.Content[0])
			}
			if l, ok := r.Content[1].(mcp.ResourceLink); !ok || l.URI != "https://example.invalid/dot.png" {
				t.Errorf("content[1] = %#v, want a resource link", r.Content[1])
			}
		})
	}

	t.Run("timeout cancels the task", func(t *testing.T) {
		for _, v := range []string{"agent", "agent-poll", "agent-v03"} {
			before := len(agent.canceled(t))
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			_, err := call(ctx, v+"__slow", map[string]any{"text": "x"})
			cancel()
			if code, _ := errCode(err); code != hub.CodeTimeout {
				t.Fatalf("%s: err = %v, want timeout", v, err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(agent.canceled(t)) == before {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the agent never got CancelTask", v)
				}
				time.Sleep(20 * time.Millisecond) // polling a condition, not timing
			}
		}
	})

	t.Run("429 is rate_limited", func(t *testing.T) {
		agent.control(t, "429")
		defer agent.control(t, "ok")
		for _, v := range []string{"agent", "agent-poll", "agent-v03"} {
			_, err := call(t.Context(), v+"__echo", map[string]any{"text": "x"})
			code, e := errCode(err)
			if code != hub.CodeRateLimited || e.RetryAfter != 2*time.Second {
				t.Fatalf("%s: err = %v (retry after %v), want rate_limited after 2s", v, err, e.RetryAfter)
			}
		}
	})
}

func TestUnreachableAgent(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	cat := registry.NewCatalog()
	m := NewManager(cat, &Options{Logger: quietLogger(), RetryMin: time.Hour})
	defer m.Close()
	if err := m.Add(t.Context(), a2aSpec("gone", url+WellKnownCardPath)); err != nil {
		t.Fatal(err)
	}
	if err := m.Ping(t.Context(), "gone"); err == nil {
		t.Error("ping of an agent never reached passed")
	}
	if err := m.Refresh(t.Context(), "gone"); err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("refresh: %v", err)
	}
	st := m.Status("gone")
	if st.State != StateUnavailable || !strings.Contains(st.LastError, "not reachable") {
		t.Errorf("status = %+v", st)
	}
	inv, ok := m.Upstream("gone")
	if !ok {
		t.Fatal("no upstream")
	}
	_, err := inv.Invoke(t.Context(), &hub.Call{Tool: &registry.Tool{Vendor: "gone", Def: registry.ToolDef{Name: "x"}}})
	if code, _ := errCode(err); code != hub.CodeUnavailable {
		t.Errorf("invoke: %v, want unavailable", err)
	}
}

// cardServer serves a card whose skills a test can change.
type cardServer struct {
	mu     sync.Mutex
	skills string
	ts     *httptest.Server
}

func newCardServer(t *testing.T, skills string) *cardServer {
	cs := &cardServer{skills: skills}
	cs.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"name":"C","version":"1","supportedInterfaces":[{"url":"` + cs.ts.URL + `/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{},"skills":` + cs.skills + `}`))
	}))
	t.Cleanup(cs.ts.Close)
	return cs
}

func (cs *cardServer) set(skills string) {
	cs.mu.Lock()
	cs.skills = skills
	cs.mu.Unlock()
}

func TestCardRefreshAndSync(t *testing.T) {
	cs := newCardServer(t, `[{"id":"a","name":"A","description":"","tags":[]}]`)
	cat := registry.NewCatalog()
	var changes sync.Map
	m := NewManager(cat, &Options{Logger: quietLogger(), RefreshInterval: -1, OnChange: func(s VendorStatus) { changes.Store(s.ID, s.State) }})
	defer m.Close()
	ctx := t.Context()
	specs := []registry.Vendor{
		{ID: "mcp-one", MCP: &registry.MCPSpec{Transport: registry.TransportHTTP, URL: "http://127.0.0.1:1/mcp"}},
		a2aSpec("card", cs.ts.URL+WellKnownCardPath),
	}
	if err := m.Sync(ctx, specs); err != nil {
		t.Fatal(err)
	}
	if err := m.Refresh(ctx, "card"); err != nil {
		t.Fatal(err)
	}
	if got := statusIDs(m); !slices.Equal(got, []string{"card"}) {
		t.Fatalf("managed = %v, want only the A2A vendor", got)
	}
	if _, ok := cat.VendorTool("card", "a"); !ok {
		t.Fatal("skill a not in the catalog")
	}
	if err := m.Ping(ctx, "card"); err != nil {
		t.Errorf("ping: %v", err)
	}
	if s, _ := changes.Load("card"); s != StateReady {
		t.Errorf("OnChange saw %v", s)
	}

	// A changed card replaces the tools.
	cs.set(`[{"id":"b","name":"B","description":"","tags":[],"inputModes":["application/json"]}]`)
	if err := m.Refresh(ctx, "card"); err != nil {
		t.Fatal(err)
	}
	if _, ok := cat.VendorTool("card", "a"); ok {
		t.Error("skill a is still in the catalog")
	}
	tl, ok := cat.VendorTool("card", "b")
	if !ok {
		t.Fatal("skill b not in the catalog")
	}
	var schema map[string]any
	_ = json.Unmarshal(tl.Def.InputSchema, &schema)
	if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != "data" {
		t.Errorf("schema of b = %s", tl.Def.InputSchema)
	}

	// A card that turns bad keeps the last good tools, with the error in status.
	cs.set(`[]`)
	if err := m.Refresh(ctx, "card"); err == nil || !strings.Contains(err.Error(), "skills are missing") {
		t.Fatalf("refresh of a card without skills: %v", err)
	}
	if st := m.Status("card"); st.State != StateReady || !strings.Contains(st.LastError, "skills are missing") || st.Tools != 1 {
		t.Errorf("status = %+v", st)
	}
	if code, _ := errCode(m.Ping(ctx, "card")); code != hub.CodeUpstream {
		t.Errorf("ping of a bad card: %v, want upstream_error", m.Ping(ctx, "card"))
	}

	// Sync without the vendor removes it and its tools.
	if err := m.Sync(ctx, specs[:1]); err != nil {
		t.Fatal(err)
	}
	if len(cat.VendorTools("card")) != 0 || m.Status("card").State != "" {
		t.Error("vendor not removed")
	}
	if err := m.Add(ctx, specs[0]); err == nil {
		t.Error("Add took an MCP vendor")
	}
}

func statusIDs(m *Manager) []string {
	var ids []string
	for _, s := range m.Statuses() {
		ids = append(ids, s.ID)
	}
	return ids
}
