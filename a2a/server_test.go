package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// hubUnderTest is a gateway over an in-process vendor "local" with three
// tools, and capabilities text.echo, text.slow and text.broken over them,
// served by a Server on httptest.
func startHub(t *testing.T) (*httptest.Server, *Server) {
	t.Helper()
	cat := registry.NewCatalog()
	in := json.RawMessage(`{"type":"object","required":["msg"],"properties":{"msg":{"type":"string"}},"additionalProperties":false}`)
	if errs := cat.SetVendorTools("local", []registry.ToolDef{
		{Name: "echo", InputSchema: in}, {Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "broken", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if errs := cat.SetCapabilities([]registry.Capability{
		{Name: "text.echo", Description: "Echoes msg.", InputSchema: in, Chain: []registry.ChainStep{{Tool: "local/echo"}}},
		{Name: "text.slow", Description: "Never ends.", InputSchema: json.RawMessage(`{"type":"object"}`), Chain: []registry.ChainStep{{Tool: "local/slow"}}},
		{Name: "text.broken", Description: "Always fails.", InputSchema: json.RawMessage(`{"type":"object"}`), Chain: []registry.ChainStep{{Tool: "local/broken"}}},
	}); len(errs) > 0 {
		t.Fatal(errs)
	}
	local := hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		switch c.Tool.Def.Name {
		case "echo":
			msg := c.Arguments["msg"].(string)
			return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("echo: " + msg)}, Structured: map[string]any{"echo": msg}}, nil
		case "slow":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, &hub.Error{Code: hub.CodeUnavailable, Message: "broken on purpose"}
	})
	gw := hub.NewGateway(cat, hub.UpstreamsFunc(func(v string) (hub.Invoker, bool) { return local, v == "local" }),
		&hub.Options{DefaultTimeout: time.Minute})
	srv := NewServer(gw, cat, &ServerOptions{Version: "test", PushNotifications: true, Logger: quietLogger(), Tenant: testTenant})
	mux := http.NewServeMux()
	srv.Routes(mux)
	// The front door's part: the tenant of a request (here, a header).
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t := r.Header.Get("X-Tenant"); t != "" {
			r = r.WithContext(context.WithValue(r.Context(), tenantCtxKey{}, t))
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, srv
}

// TestServerJSClient drives toolhub's A2A endpoint with the @a2a-js/sdk client.
func TestServerJSClient(t *testing.T) {
	t.Parallel() // its own stores, servers and peers
	dir := peers(t)
	ts, _ := startHub(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "a2a-client.mjs", ts.URL, "text.echo", `{"msg":"hi"}`, "text.slow")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s\n%s", err, out, stderr.String())
	}
	steps := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("client line %q: %v", sc.Text(), err)
		}
		steps[m["step"].(string)] = m
	}
	if e, ok := steps["error"]; ok {
		t.Fatalf("client failed: %v", e["message"])
	}
	if _, ok := steps["done"]; !ok {
		t.Fatalf("client did not finish:\n%s", out)
	}
	check := func(step string, want map[string]any) {
		t.Helper()
		got := steps[step]
		for k, w := range want {
			if d := cmp.Diff(w, got[k]); d != "" {
				t.Errorf("%s.%s (-want +got):\n%s", step, k, d)
			}
		}
	}
	check("card", map[string]any{"name": "toolhub", "skills": []any{"text.broken", "text.echo", "text.slow"}, "streaming": true})
	check("send", map[string]any{"state": "COMPLETED", "data": map[string]any{"echo": "hi"}})
	check("stream", map[string]any{
		"kinds":  []any{"task", "statusUpdate", "artifactUpdate", "statusUpdate"},
		"states": []any{"SUBMITTED", "WORKING", "COMPLETED"},
		"data":   map[string]any{"echo": "hi"},
	})
	check("get", map[string]any{"state": "COMPLETED"})
	check("cancel", map[string]any{"state": "CANCELED"})
	if n, _ := steps["list"]["count"].(float64); n < 2 {
		t.Errorf("list: %v tasks, want at least 2", steps["list"]["count"])
	}
	if e, _ := steps["unknown"]["error"].(string); !strings.Contains(e, "no.such.capability") {
		t.Errorf("unknown skill: error %q, want one naming the tool", e)
	}
}

// TestServerGoClient drives toolhub's A2A endpoint with the a2a-go client.
func TestServerGoClient(t *testing.T) {
	t.Parallel() // its own stores, servers and peers
	ts, _ := startHub(t)
	ctx := t.Context()
	card, err := agentcard.DefaultResolver.Resolve(ctx, ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	var skills []string
	for _, s := range card.Skills {
		skills = append(skills, s.ID)
	}
	if d := cmp.Diff([]string{"text.broken", "text.echo", "text.slow"}, skills); d != "" {
		t.Fatalf("skills (-want +got):\n%s", d)
	}
	if card.SupportedInterfaces[0].URL != ts.URL+RPCPath || !card.Capabilities.Streaming || !card.Capabilities.PushNotifications {
		t.Fatalf("card = %+v", card)
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatal(err)
	}
	msg := func(skill string, args map[string]any) *sdk.SendMessageRequest {
		m := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewDataPart(args))
		m.Metadata = map[string]any{"skill": skill}
		return &sdk.SendMessageRequest{Message: m}
	}

	res, err := client.SendMessage(ctx, msg("text.echo", map[string]any{"msg": "hi"}))
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*sdk.Task)
	if !ok || task.Status.State != sdk.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("SendMessage = %#v", res)
	}
	art := task.Artifacts[0]
	if d := cmp.Diff(map[string]any{"echo": "hi"}, art.Parts[0].Data()); d != "" {
		t.Errorf("data part: %s", d)
	}
	if prov, _ := art.Metadata["toolhub/provenance"].(map[string]any); prov["vendor"] != "local" || prov["capability"] != "text.echo" {
		t.Errorf("provenance = %v", art.Metadata)
	}

	// Routing by a data part's "tool" field, without metadata.
	m := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewDataPart(map[string]any{"tool": "text.echo", "arguments": map[string]any{"msg": "by tool"}}))
	if res, err := client.SendMessage(ctx, &sdk.SendMessageRequest{Message: m}); err != nil || res.(*sdk.Task).Artifacts[0].Parts[0].Data().(map[string]any)["echo"] != "by tool" {
		t.Errorf("tool field routing: %v %v", res, err)
	}

	var states []sdk.TaskState
	var kinds []string
	for ev, err := range client.SendStreamingMessage(ctx, msg("text.echo", map[string]any{"msg": "s"})) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *sdk.Task:
			kinds, states = append(kinds, "task"), append(states, e.Status.State)
		case *sdk.TaskStatusUpdateEvent:
			kinds, states = append(kinds, "status"), append(states, e.Status.State)
		case *sdk.TaskArtifactUpdateEvent:
			kinds = append(kinds, "artifact")
		}
	}
	if d := cmp.Diff([]sdk.TaskState{sdk.TaskStateSubmitted, sdk.TaskStateWorking, sdk.TaskStateCompleted}, states); d != "" {
		t.Errorf("stream states (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"task", "status", "artifact", "status"}, kinds); d != "" {
		t.Errorf("stream events (-want +got):\n%s", d)
	}

	got, err := client.GetTask(ctx, &sdk.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != sdk.TaskStateCompleted {
		t.Fatalf("GetTask = %v, %v", got, err)
	}
	list, err := client.ListTasks(ctx, &sdk.ListTasksRequest{})
	if err != nil || len(list.Tasks) < 3 {
		t.Fatalf("ListTasks = %v, %v", list, err)
	}

	// A failed vendor call is a failed task carrying toolhub's error code.
	res, err = client.SendMessage(ctx, msg("text.broken", map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	if ft := res.(*sdk.Task); ft.Status.State != sdk.TaskStateFailed || ft.Status.Message == nil ||
		ft.Status.Message.Metadata["toolhub/error"].(map[string]any)["code"] != "unavailable" {
		t.Errorf("broken: %#v", ft.Status)
	}

	// Unknown capability and bad arguments are invalid params, before any task.
	if _, err := client.SendMessage(ctx, msg("no.such", map[string]any{})); !errors.Is(err, sdk.ErrInvalidParams) || !strings.Contains(err.Error(), "no.such") {
		t.Errorf("unknown: %v", err)
	}
	if _, err := client.SendMessage(ctx, msg("text.echo", map[string]any{"msg": 7})); !errors.Is(err, sdk.ErrInvalidParams) || !strings.Contains(err.Error(), "/msg") {
		t.Errorf("bad args: %v", err)
	}

	// A running task: subscribe, cancel, see it canceled.
	req := msg("text.slow", map[string]any{})
	req.Config = &sdk.SendMessageConfig{ReturnImmediately: true}
	res, err = client.SendMessage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	slow := res.(*sdk.Task)
	subDone := make(chan []sdk.TaskState)
	attached := make(chan struct{})
	go func() {
		var seen []sdk.TaskState
		for ev, err := range client.SubscribeToTask(ctx, &sdk.SubscribeToTaskRequest{ID: slow.ID}) {
			if err != nil {
				seen = append(seen, sdk.TaskState("error: "+err.Error()))
				break
			}
			if len(seen) == 0 {
				close(attached)
			}
			switch e := ev.(type) {
			case *sdk.Task:
				seen = append(seen, e.Status.State)
			case *sdk.TaskStatusUpdateEvent:
				seen = append(seen, e.Status.State)
			}
		}
		subDone <- seen
	}()
	// Cancel once the subscription is attached (its first event, the
	// task, has arrived): a task canceled before that is terminal, and
	// subscribing to it is refused.
	select {
	case <-attached:
	case seen := <-subDone:
		t.Fatalf("subscription ended before its first event: %v", seen)
	case <-time.After(10 * time.Second):
		t.Fatal("no event from the subscription")
	}
	canceled, err := client.CancelTask(ctx, &sdk.CancelTaskRequest{ID: slow.ID})
	if err != nil || canceled.Status.State != sdk.TaskStateCanceled {
		t.Fatalf("CancelTask = %v, %v", canceled, err)
	}
	select {
	case seen := <-subDone:
		if !slices.Contains(seen, sdk.TaskStateCanceled) {
			t.Errorf("subscription saw %v, want canceled", seen)
		}
	case <-time.After(10 * time.Second):
		t.Error("subscription did not end after the cancel")
	}

	// Push notification configs (the SDK's in-memory store).
	pc, err := client.CreateTaskPushConfig(ctx, &sdk.PushConfig{TaskID: task.ID, ID: "p1", URL: "http://127.0.0.1:1/hook"})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := client.GetTaskPushConfig(ctx, &sdk.GetTaskPushConfigRequest{TaskID: task.ID, ID: pc.ID}); err != nil || g.URL != "http://127.0.0.1:1/hook" {
		t.Errorf("GetTaskPushConfig = %v, %v", g, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not timing
	}
}

// TestServerV03Client: an A2A 0.3 client (a2a-go's a2acompat/a2av0) reads
// the card's 0.3 fields and calls the endpoint without A2A-Version 1.0.
func TestServerV03Client(t *testing.T) {
	ts, _ := startHub(t)
	ctx := t.Context()
	resp, err := http.Get(ts.URL + CardPath)
	if err != nil {
		t.Fatal(err)
	}
	var v0card struct {
		URL             string `json:"url"`
		ProtocolVersion string `json:"protocolVersion"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v0card)
	resp.Body.Close()
	if err != nil || v0card.URL != ts.URL+RPCPath || v0card.ProtocolVersion != "0.3" {
		t.Fatalf("0.3 fields of the card: %+v, %v", v0card, err)
	}
	client, err := a2aclient.NewFactory(a2aclient.WithDefaultsDisabled(), a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{})).
		CreateFromEndpoints(ctx, []*sdk.AgentInterface{{URL: v0card.URL, ProtocolBinding: sdk.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}})
	if err != nil {
		t.Fatal(err)
	}
	m := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewDataPart(map[string]any{"msg": "old"}))
	m.Metadata = map[string]any{"skill": "text.echo"}
	res, err := client.SendMessage(ctx, &sdk.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*sdk.Task)
	if !ok || task.Status.State != sdk.TaskStateCompleted || task.Artifacts[0].Parts[0].Data().(map[string]any)["echo"] != "old" {
		t.Fatalf("0.3 SendMessage = %#v", res)
	}
}

// TestHubAsVendor registers one toolhub's A2A endpoint as an A2A vendor of
// another: the manager reads toolhub's card and calls its capabilities.
func TestHubAsVendor(t *testing.T) {
	ts, _ := startHub(t)
	cat := registry.NewCatalog()
	m := NewManager(cat, &Options{Logger: quietLogger(), RefreshInterval: -1})
	defer m.Close()
	addReady(t, m, a2aSpec("hub2", ts.URL+CardPath))
	if st := m.Status("hub2"); st.Protocol != "1.0" || !st.Streaming {
		t.Errorf("status = %+v", st)
	}
	tool, ok := cat.VendorTool("hub2", "text.echo")
	if !ok {
		t.Fatalf("no hub2 text.echo in %v", cat.Tools())
	}
	gw := hub.NewGateway(cat, m, nil)
	r, err := gw.Call(t.Context(), &hub.Call{Tenant: "default", Name: tool.Catalog, Arguments: map[string]any{"data": map[string]any{"msg": "nested"}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"echo": "nested"}, r.Structured); d != "" {
		t.Errorf("structured: %s", d)
	}
	broken, _ := cat.VendorTool("hub2", "text.broken")
	_, err = gw.Call(t.Context(), &hub.Call{Tenant: "default", Name: broken.Catalog, Arguments: map[string]any{"data": map[string]any{}}})
	if code, e := errCode(err); code != hub.CodeUpstream || !strings.Contains(e.Message, "broken on purpose") {
		t.Errorf("broken: %v", err)
	}
}

type tenantCtxKey struct{}

func testTenant(ctx context.Context) string {
	if t, ok := ctx.Value(tenantCtxKey{}).(string); ok {
		return t
	}
	return "default"
}

// TestServerTenants: a tenant sees, gets and cancels only its own tasks.
func TestServerTenants(t *testing.T) {
	ts, _ := startHub(t)
	card, err := agentcard.DefaultResolver.Resolve(t.Context(), ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := a2aclient.NewFromCard(t.Context(), card)
	if err != nil {
		t.Fatal(err)
	}
	as := func(tenant string) context.Context {
		return a2aclient.AttachServiceParams(t.Context(), a2aclient.ServiceParams{"X-Tenant": {tenant}})
	}
	send := func(ctx context.Context, skill string, args map[string]any, immediate bool) *sdk.Task {
		t.Helper()
		m := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewDataPart(args))
		m.Metadata = map[string]any{"skill": skill}
		req := &sdk.SendMessageRequest{Message: m}
		if immediate {
			req.Config = &sdk.SendMessageConfig{ReturnImmediately: true}
		}
		res, err := client.SendMessage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res.(*sdk.Task)
	}
	a, b := as("a"), as("b")
	ta := send(a, "text.echo", map[string]any{"msg": "mine"}, false)
	if ta.Status.State != sdk.TaskStateCompleted {
		t.Fatalf("tenant a: %v", ta.Status)
	}
	if _, err := client.GetTask(b, &sdk.GetTaskRequest{ID: ta.ID}); !errors.Is(err, sdk.ErrTaskNotFound) {
		t.Errorf("tenant b got a's task: %v", err)
	}
	if got, err := client.GetTask(a, &sdk.GetTaskRequest{ID: ta.ID}); err != nil || got.Status.State != sdk.TaskStateCompleted {
		t.Errorf("tenant a lost its task: %v, %v", got, err)
	}
	slow := send(a, "text.slow", map[string]any{}, true)
	if _, err := client.CancelTask(b, &sdk.CancelTaskRequest{ID: slow.ID}); !errors.Is(err, sdk.ErrTaskNotFound) {
		t.Errorf("tenant b canceled a's task: %v", err)
	}
	tb := send(b, "text.echo", map[string]any{"msg": "theirs"}, false)
	for tenant, want := range map[string]sdk.TaskID{"a": ta.ID, "b": tb.ID} {
		list, err := client.ListTasks(as(tenant), &sdk.ListTasksRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range list.Tasks {
			if tk.Metadata[tenantKey] != tenant {
				t.Errorf("tenant %s lists a task of %v", tenant, tk.Metadata[tenantKey])
			}
		}
		if !slices.ContainsFunc(list.Tasks, func(tk *sdk.Task) bool { return tk.ID == want }) {
			t.Errorf("tenant %s does not list its task", tenant)
		}
	}
	if c, err := client.CancelTask(a, &sdk.CancelTaskRequest{ID: slow.ID}); err != nil || c.Status.State != sdk.TaskStateCanceled {
		t.Errorf("tenant a cancel: %v, %v", c, err)
	}
	// Push configs belong to the task's tenant too.
	if _, err := client.CreateTaskPushConfig(b, &sdk.PushConfig{TaskID: ta.ID, URL: "http://127.0.0.1:1/b"}); !errors.Is(err, sdk.ErrTaskNotFound) {
		t.Errorf("tenant b set a push config on a's task: %v", err)
	}
	pc, err := client.CreateTaskPushConfig(a, &sdk.PushConfig{TaskID: ta.ID, URL: "http://127.0.0.1:1/a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.GetTaskPushConfig(b, &sdk.GetTaskPushConfigRequest{TaskID: ta.ID, ID: pc.ID}); !errors.Is(err, sdk.ErrTaskNotFound) {
		t.Errorf("tenant b read a's push config: %v", err)
	}
	if l, err := client.ListTaskPushConfigs(a, &sdk.ListTaskPushConfigRequest{TaskID: ta.ID}); err != nil || len(l) != 1 {
		t.Errorf("tenant a's push configs = %v, %v", l, err)
	}
}

// TestServerCardSecurity: the card tells clients how to authenticate.
func TestServerCardSecurity(t *testing.T) {
	cat := registry.NewCatalog()
	gw := hub.NewGateway(cat, hub.UpstreamsFunc(func(string) (hub.Invoker, bool) { return nil, false }), nil)
	srv := NewServer(gw, cat, &ServerOptions{
		URL:                  "https://hub.example.com/",
		SecuritySchemes:      sdk.NamedSecuritySchemes{"bearer": sdk.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "a toolhub tenant key"}},
		SecurityRequirements: sdk.SecurityRequirementsOptions{{"bearer": {}}},
	})
	mux := http.NewServeMux()
	srv.Routes(mux)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	card, err := agentcard.DefaultResolver.Resolve(t.Context(), ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := card.SecuritySchemes["bearer"].(sdk.HTTPAuthSecurityScheme); !ok || s.Scheme != "Bearer" || len(card.SecurityRequirements) != 1 {
		t.Errorf("security = %#v %#v", card.SecuritySchemes, card.SecurityRequirements)
	}
	// The manager's parser reads it too (this catalog is empty, so the
	// only complaint is the missing skills), and so does a 0.3 client that
	// asks for 0.3.
	if _, err := FetchCard(t.Context(), nil, ts.URL+CardPath); err == nil || err.Error() != "agent card "+ts.URL+CardPath+": skills are missing: toolhub serves each skill as a tool" {
		t.Errorf("FetchCard: %v", err)
	}
	req, _ := http.NewRequest("GET", ts.URL+CardPath, nil)
	req.Header.Set("A2A-Version", "0.3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v0 map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&v0)
	resp.Body.Close()
	if sch, _ := v0["securitySchemes"].(map[string]any)["bearer"].(map[string]any); v0["protocolVersion"] != "0.3" || sch["type"] != "http" {
		t.Errorf("0.3 card: %v", v0)
	}
	if card.SupportedInterfaces[0].URL != "https://hub.example.com/a2a" {
		t.Errorf("interface = %+v", card.SupportedInterfaces[0])
	}
}
