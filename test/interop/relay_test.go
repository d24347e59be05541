package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/test/harness"
)

// stepEvent is one {"event":"step"|"sampling"|"elicitation"} line of the
// scripted TypeScript client.
type stepEvent struct {
	Event    string            `json:"event"`
	Op       string            `json:"op"`
	Name     string            `json:"name"`
	Result   json.RawMessage   `json:"result"`
	Error    *rpcErr           `json:"error"`
	Progress []json.RawMessage `json:"progress"`
	Params   json.RawMessage   `json:"params"`
	Message  string            `json:"message"`
}

// runTSSpec runs the TypeScript SDK client with spec and returns its events.
func runTSSpec(t *testing.T, peerDir string, spec map[string]any) []stepEvent {
	t.Helper()
	var events []stepEvent
	runTSLines(t, peerDir, spec, 3*time.Minute, func(b []byte) {
		var e stepEvent
		_ = json.Unmarshal(b, &e) // runTSLines has read it as JSON
		events = append(events, e)
	})
	return events
}

func step(t *testing.T, events []stepEvent, op, name string) stepEvent {
	t.Helper()
	for _, e := range events {
		if e.Event == "step" && e.Op == op && e.Name == name {
			return e
		}
	}
	t.Fatalf("no %s step for %q in %+v", op, name, events)
	return stepEvent{}
}

func count(events []stepEvent, kind string) int {
	n := 0
	for _, e := range events {
		if e.Event == kind {
			n++
		}
	}
	return n
}

// TestTypeScriptClientRelayPerVendor drives server-everything (a stdio
// vendor) through /mcp/vendors/everything with the official TypeScript SDK
// client: everything MCP besides tools comes through, and the vendor's
// requests reach the client and are answered.
func TestTypeScriptClientRelayPerVendor(t *testing.T) {
	dir := peers(t)
	h := startHub(t, dir)
	testRelay(t, h, dir, "/mcp/vendors/everything", func(s string) string { return s })

	// A client that did not declare sampling gets the vendor's request
	// refused with a clear error, not a hang.
	events := runTSSpec(t, dir, map[string]any{
		"url":   h.URL + "/mcp/vendors/everything",
		"steps": []map[string]any{{"op": "call", "name": "trigger-sampling-request", "arguments": map[string]any{"prompt": "say hi"}}},
	})
	e := step(t, events, "call", "trigger-sampling-request")
	if got := string(e.Result); e.Error == nil && !strings.Contains(got, "did not declare the sampling capability") {
		t.Errorf("sampling for a client without the capability: %s", got)
	} else if e.Error != nil && !strings.Contains(e.Error.Message, "did not declare the sampling capability") {
		t.Errorf("sampling for a client without the capability: %+v", e.Error)
	}
}

// TestTypeScriptClientRelayAggregated does the same through /mcp, where
// prompts are "<vendor>__<name>" and resource URIs
// "toolhub://<vendor>/<uri>".
func TestTypeScriptClientRelayAggregated(t *testing.T) {
	dir := peers(t)
	h := startHub(t, dir)
	testRelay(t, h, dir, "/mcp", func(s string) string {
		if strings.Contains(s, "://") {
			return "toolhub://everything/" + s
		}
		return "everything__" + s
	})
}

// testRelay drives the TypeScript client through an endpoint; name maps
// server-everything's own names to the endpoint's.
func testRelay(t *testing.T, h *harness.InProcess, dir, path string, name func(string) string) {
	t.Helper()
	// logging/setLevel is relayed on a vendor's own endpoint (on /mcp it
	// would name no vendor).
	perVendor := path != "/mcp"
	var setLevel []map[string]any
	if perVendor {
		setLevel = []map[string]any{{"op": "setLevel", "level": "debug"}}
	}
	events := runTSSpec(t, dir, map[string]any{
		"url":          h.URL + path,
		"capabilities": true,
		"elicitAnswer": map[string]any{"name": "Ada", "check": true, "integer": 7},
		"steps": append(setLevel, []map[string]any{
			{"op": "subscribe", "uri": name("demo://resource/dynamic/text/1")},
			{"op": "unsubscribe", "uri": name("demo://resource/dynamic/text/1")},
			{"op": "listResources"},
			{"op": "readResource", "uri": name("demo://resource/dynamic/text/1")},
			{"op": "listPrompts"},
			{"op": "getPrompt", "name": name("args-prompt"), "arguments": map[string]any{"city": "Lisbon", "state": "PT"}},
			{"op": "complete", "ref": map[string]any{"type": "ref/prompt", "name": name("completable-prompt")},
				"argument": map[string]any{"name": "department", "value": "Eng"}},
			{"op": "call", "name": name("trigger-sampling-request"), "arguments": map[string]any{"prompt": "say hi"}},
			{"op": "call", "name": name("trigger-elicitation-request")},
			{"op": "call", "name": name("trigger-long-running-operation"), "arguments": map[string]any{"duration": 0.3, "steps": 3}, "progress": true},
			{"op": "call", "name": name("trigger-long-running-operation"), "arguments": map[string]any{"duration": 120, "steps": 600},
				"progress": true, "cancelAfterProgress": 1},
		}...),
	})
	checkRelay(t, events, name)
	for _, op := range []string{"setLevel", "subscribe", "unsubscribe"} {
		for _, e := range events {
			if e.Event == "step" && e.Op == op && e.Error != nil {
				t.Errorf("%s: %+v", op, e.Error)
			}
		}
	}

	// The cancelled call ended at toolhub too: nothing stays in flight on
	// the vendor's connection (the operation would run two minutes).
	deadline := time.Now().Add(60 * time.Second)
	for h.Manager.Status("everything").InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled call is still in flight at the vendor: %+v", h.Manager.Status("everything"))
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not timing
	}

	// resources/read and prompts/get are metered like tool calls.
	if err := h.Meter.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err := h.Ledger.Query(t.Context(), billing.Filter{Vendor: "everything", To: time.Now().Add(time.Hour)}, func(e billing.Event) error {
		seen[e.Tool] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Issue 29: completions, logging/setLevel and resource subscriptions
	// too (before, setLevel and subscriptions went to the vendor unmetered).
	wants := []string{"resources/read", "prompts/get", "completion/complete", "resources/subscribe", "resources/unsubscribe"}
	if perVendor {
		wants = append(wants, "logging/setLevel")
	}
	for _, want := range wants {
		if !seen[want] {
			t.Errorf("no usage event for %s in the ledger; tools metered: %v", want, seen)
		}
	}
}

func checkRelay(t *testing.T, events []stepEvent, name func(string) string) {
	t.Helper()
	if e := step(t, events, "listResources", ""); e.Error != nil || !strings.Contains(string(e.Result), name("demo://")) {
		t.Errorf("resources/list: %+v %s", e.Error, e.Result)
	}
	if e := step(t, events, "readResource", name("demo://resource/dynamic/text/1")); e.Error != nil || !strings.Contains(string(e.Result), name("demo://resource/dynamic/text/1")) {
		t.Errorf("resources/read: %+v %s", e.Error, e.Result)
	}
	if e := step(t, events, "listPrompts", ""); e.Error != nil || !strings.Contains(string(e.Result), name("args-prompt")) {
		t.Errorf("prompts/list: %+v %s", e.Error, e.Result)
	}
	if e := step(t, events, "getPrompt", name("args-prompt")); e.Error != nil || !strings.Contains(string(e.Result), "Lisbon") {
		t.Errorf("prompts/get: %+v %s", e.Error, e.Result)
	}
	if e := step(t, events, "complete", ""); e.Error != nil || !strings.Contains(string(e.Result), "Engineering") {
		t.Errorf("completion/complete: %+v %s", e.Error, e.Result)
	}
	if e := step(t, events, "call", name("trigger-sampling-request")); e.Error != nil || !strings.Contains(string(e.Result), "sampled by the TypeScript client") {
		t.Errorf("sampling round trip: %+v %s", e.Error, e.Result)
	}
	if n := count(events, "sampling"); n != 1 {
		t.Errorf("the client answered %d sampling requests, want 1", n)
	}
	if e := step(t, events, "call", name("trigger-elicitation-request")); e.Error != nil || !strings.Contains(string(e.Result), "Ada") {
		t.Errorf("elicitation round trip: %+v %s", e.Error, e.Result)
	}
	if n := count(events, "elicitation"); n != 1 {
		t.Errorf("the client answered %d elicitation requests, want 1", n)
	}
	var long, cancelled stepEvent
	for _, e := range events {
		if e.Event == "step" && e.Name == name("trigger-long-running-operation") {
			if e.Error == nil {
				long = e
			} else {
				cancelled = e
			}
		}
	}
	if len(long.Progress) < 3 {
		t.Errorf("progress: the client got %d notifications, want 3 (%+v)", len(long.Progress), long)
	}
	if cancelled.Error == nil || len(cancelled.Progress) == 0 {
		t.Errorf("cancellation: want the call aborted after a progress notification; got %+v", cancelled)
	}
}

// TestA2AJSClientSkillsAndPlainText: the @a2a-js/sdk client against a whole
// toolhub: the card lists the vendor's tools as skills, a message naming a
// skill calls it, and a plain text "hello" naming none goes to the planner
// (it used to be refused with -32602 "say which capability to call").
func TestA2AJSClientSkillsAndPlainText(t *testing.T) {
	dir := peers(t)
	src, err := os.ReadFile("../peers/a2a/client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a2a-client.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, dir)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "a2a-client.mjs", h.URL, "everything__echo", `{"message":"hi"}`, "everything__trigger-long-running-operation")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	steps := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
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
	skills, _ := steps["card"]["skills"].([]any)
	var ids []string
	for _, s := range skills {
		ids = append(ids, s.(string))
	}
	for _, want := range []string{"everything__echo", "toolhub.plan"} {
		if !strings.Contains(strings.Join(ids, " "), want) {
			t.Errorf("card skills %v lack %s", ids, want)
		}
	}
	if st := steps["send"]["state"]; st != "COMPLETED" {
		t.Errorf("a message naming skill everything__echo: state %v, want COMPLETED (%v)", st, steps["send"])
	}
	hello := steps["hello"]
	if e, _ := hello["error"].(string); e != "" {
		t.Fatalf("plain text hello: error %q, want the planner to take it", e)
	}
	if st := hello["state"]; st != "COMPLETED" && st != "FAILED" {
		t.Errorf("plain text hello: state %v, want the planner's task to end", st)
	}
	if txt, _ := hello["text"].(string); txt == "" {
		t.Errorf("plain text hello: no answer text from the planner: %v", hello)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestRESTResourcesAndPromptsTenantFiltered: GET /v1/resources and
// /v1/prompts list server-everything's resources and prompts for a tenant
// that sees the vendor, and nothing for one that does not; that tenant's
// resources/read and prompts/get through MCP are refused too.
func TestRESTResourcesAndPromptsTenantFiltered(t *testing.T) {
	dir := peers(t)
	h := startHub(t, dir)
	var res struct {
		Resources []struct {
			Vendor, Kind, URI string
			ScopedURI         string `json:"scoped_uri"`
		} `json:"resources"`
	}
	getJSON(t, h.URL+"/v1/resources", &res)
	var kinds = map[string]int{}
	for _, r := range res.Resources {
		kinds[r.Kind]++
		if r.Vendor != "everything" || r.ScopedURI != "toolhub://everything/"+r.URI {
			t.Errorf("resource %+v", r)
		}
	}
	if kinds["resource"] == 0 || kinds["template"] == 0 {
		t.Errorf("GET /v1/resources: %v resources and templates; want both", kinds)
	}
	var ps struct {
		Prompts []struct {
			Vendor, Name string
			ScopedName   string `json:"scoped_name"`
		} `json:"prompts"`
	}
	getJSON(t, h.URL+"/v1/prompts", &ps)
	found := false
	for _, p := range ps.Prompts {
		found = found || p.ScopedName == "everything__args-prompt" && p.Name == "args-prompt"
	}
	if !found {
		t.Errorf("GET /v1/prompts lacks args-prompt: %+v", ps.Prompts)
	}

	// A tenant that sees none of the vendor's tools.
	h2 := startHub(t, dir, `tenants: [{id: default, tools: ["other__*"]}]`)
	getJSON(t, h2.URL+"/v1/resources", &res)
	getJSON(t, h2.URL+"/v1/prompts", &ps)
	if len(res.Resources) != 0 || len(ps.Prompts) != 0 {
		t.Errorf("a tenant without the vendor sees %d resources and %d prompts", len(res.Resources), len(ps.Prompts))
	}
	// /mcp/vendors/everything refuses such a tenant outright; on /mcp the
	// vendor's names do not resolve for it.
	events := runTSSpec(t, dir, map[string]any{
		"url": h2.URL + "/mcp",
		"steps": []map[string]any{
			{"op": "readResource", "uri": "toolhub://everything/demo://resource/dynamic/text/1"},
			{"op": "getPrompt", "name": "everything__simple-prompt"},
		},
	})
	if e := step(t, events, "readResource", "toolhub://everything/demo://resource/dynamic/text/1"); e.Error == nil {
		t.Errorf("resources/read for a tenant without the vendor: %s", e.Result)
	}
	if e := step(t, events, "getPrompt", "everything__simple-prompt"); e.Error == nil {
		t.Errorf("prompts/get for a tenant without the vendor: %s", e.Result)
	}
}

// TestHighRiskHandOffOverElicitation: a high-risk capability whose primary
// is degraded asks the calling user (the TypeScript client) over MCP
// elicitation; confirmed, it runs. A client without elicitation gets the
// review queue (needs_review) as before.
func TestHighRiskHandOffOverElicitation(t *testing.T) {
	dir := peers(t)
	h := startHub(t, dir, `
capabilities:
  - name: text.echo
    description: Echoes a message (high-risk, for the test).
    input_schema: {type: object, required: [message], properties: {message: {type: string}}}
    chain:
      - tool: everything/echo
      - tool: everything/echo
fallback:
  capabilities: {text.echo: {high_risk: true}}
`)
	if err := h.Modes.Pin("text.echo", fallback.Degraded); err != nil {
		t.Fatal(err)
	}
	name := registry.CapabilityCatalogName("text.echo")
	events := runTSSpec(t, dir, map[string]any{
		"url": h.URL + "/mcp", "capabilities": true, "elicitAnswer": map[string]any{"confirm": true},
		"steps": []map[string]any{{"op": "call", "name": name, "arguments": map[string]any{"message": "risky hello"}}},
	})
	if e := step(t, events, "call", name); e.Error != nil || !strings.Contains(string(e.Result), "risky hello") || strings.Contains(string(e.Result), "needs_review") {
		t.Errorf("confirmed over elicitation: %+v %s; want the echo", e.Error, e.Result)
	}
	if n := count(events, "elicitation"); n != 1 {
		t.Errorf("the user was asked %d times, want 1", n)
	}

	events = runTSSpec(t, dir, map[string]any{
		"url":   h.URL + "/mcp",
		"steps": []map[string]any{{"op": "call", "name": name, "arguments": map[string]any{"message": "risky hello"}}},
	})
	if e := step(t, events, "call", name); e.Error != nil || !strings.Contains(string(e.Result), "needs_review") {
		t.Errorf("a client without elicitation: %+v %s; want the review queue", e.Error, e.Result)
	}
}
