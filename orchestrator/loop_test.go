package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
)

func newLLMPlanner(t testing.TB, h *testHub, m *scriptedModel) *Planner {
	p := &Planner{Gateway: h, Catalog: h.Catalog(), Model: m.client(t)}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoopParallelToolCalls(t *testing.T) {
	b := newBarrier(3)
	h := newTestHub(t, map[string]tool{"wx/current": b.tool, "maps/route": b.tool, "places/search": b.tool}, nil)
	m := newScriptedModel(t, func(i int, req map[string]any) (int, string) {
		if i == 1 {
			return 200, toolCalls(
				call{"call_1", "wx__current", `{"city":"Paris"}`},
				call{"call_2", "maps__route", `{"from":"Paris","to":"Lyon"}`},
				call{"call_3", "places__search", `{"near":"Lyon"}`})
		}
		return 200, final("Sunny in Paris; 465 km to Lyon; eat at Chez X.")
	})
	p := newLLMPlanner(t, h, m)
	var events []string
	out, err := p.Run(t.Context(), "acme", Request{Goal: "trip from Paris to Lyon"}, func(e Event) {
		if e.Type != EventModel {
			events = append(events, e.Type+" "+e.Step)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Answer != "Sunny in Paris; 465 km to Lyon; eat at Chez X." || out.Status != StatusOK || out.Mode != ModeLLM || out.Turns != 2 {
		t.Errorf("outcome %+v", out)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	if reqs[0]["model"] != "test-model" || len(reqs[0]["tools"].([]any)) != 3 {
		t.Errorf("first request: model %v, %d tools", reqs[0]["model"], len(reqs[0]["tools"].([]any)))
	}
	want := map[string]string{
		"call_1": `{"city":"Paris"}`,
		"call_2": `{"from":"Paris","to":"Lyon"}`,
		"call_3": `{"near":"Lyon"}`,
	}
	if diff := cmp.Diff(want, toolMessages(reqs[1])); diff != "" {
		t.Errorf("tool messages (-want +got)\n%s", diff)
	}
	// The assistant message with the tool calls precedes the results.
	msgs := reqs[1]["messages"].([]any)
	if a := msgs[2].(map[string]any); a["role"] != "assistant" || len(a["tool_calls"].([]any)) != 3 {
		t.Errorf("message 2 is %v, want the assistant's tool calls", a)
	}
	for _, c := range h.Calls() {
		if c.PlanID != out.PlanID || c.Tenant != "acme" {
			t.Errorf("call %s: plan %q tenant %q, want %q acme", c.Name, c.PlanID, c.Tenant, out.PlanID)
		}
	}
	if len(events) != 6 {
		t.Errorf("events %v, want 3 started and 3 finished", events)
	}
}

func TestLoopToolErrorFedBack(t *testing.T) {
	h := newTestHub(t, map[string]tool{"wx/current": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		if c.Arguments["city"] != "Paris" {
			return nil, &hub.Error{Code: hub.CodeUpstream, Message: "unknown city " + c.Arguments["city"].(string)}
		}
		return echo(ctx, c)
	}}, nil)
	m := newScriptedModel(t, func(i int, req map[string]any) (int, string) {
		switch i {
		case 1:
			return 200, toolCalls(call{"c1", "wx__current", `{"city":"Pariss"}`})
		case 2:
			return 200, toolCalls(call{"c2", "wx__current", `{"city":"Paris"}`})
		}
		return 200, final("done")
	})
	out, err := newLLMPlanner(t, h, m).Run(t.Context(), "t", Request{Goal: "weather in Pariss"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	var got map[string]map[string]string
	if err := json.Unmarshal([]byte(toolMessages(reqs[1])["c1"]), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]map[string]string{"error": {"code": "upstream_error", "message": "unknown city Pariss"}}, got); diff != "" {
		t.Errorf("error fed back (-want +got)\n%s", diff)
	}
	if toolMessages(reqs[2])["c2"] != `{"city":"Paris"}` {
		t.Errorf("corrected call answered %q", toolMessages(reqs[2])["c2"])
	}
	if out.Status != "degraded" || len(out.Steps) != 2 || out.Steps[0].Status != StatusFailed || out.Steps[1].Status != StatusOK {
		t.Errorf("outcome %+v", out)
	}
}

func TestLoopMalformedCalls(t *testing.T) {
	h := newTestHub(t, map[string]tool{"wx/current": echo, "wx/broken": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		return &hub.Result{IsError: true, Content: []mcp.Content{mcp.NewTextContent("city not found")}}, nil
	}}, nil)
	m := newScriptedModel(t, func(i int, req map[string]any) (int, string) {
		if i == 1 {
			return 200, toolCalls(
				call{"tool_error", "wx__broken", `{}`},
				call{"bad_json", "wx__current", `{"city": "Paris"`},
				call{"array", "wx__current", `["Paris"]`},
				call{"unknown", "nope__tool", `{}`},
				call{"empty", "wx__current", ``},
			)
		}
		return 200, final("sorry")
	})
	_, err := newLLMPlanner(t, h, m).Run(t.Context(), "t", Request{Goal: "weather"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := toolMessages(m.requests()[1])
	for id, want := range map[string]string{
		"bad_json":   `"code":"invalid_arguments","message":"arguments are not valid JSON`,
		"array":      `"code":"invalid_arguments","message":"arguments must be a JSON object, got an array`,
		"unknown":    `"code":"unknown_tool","message":"unknown tool \"nope__tool\"`,
		"empty":      `{}`,
		"tool_error": `{"error":{"code":"tool_error","message":"city not found"}}`,
	} {
		if !strings.Contains(got[id], want) {
			t.Errorf("%s: model got %s, want it to contain %s", id, got[id], want)
		}
	}
	if n := len(h.Calls()); n != 2 {
		t.Errorf("%d upstream calls, want 2 (the broken tool and the empty-arguments call)", n)
	}
}

func TestLoopStepBudget(t *testing.T) {
	h := newTestHub(t, map[string]tool{"wx/current": echo}, nil)
	m := newScriptedModel(t, func(i int, req map[string]any) (int, string) {
		return 200, toolCalls(call{"c", "wx__current", fmt.Sprintf(`{"city":"Paris %d"}`, i)}) // forever, never the same
	})
	out, err := newLLMPlanner(t, h, m).Run(t.Context(), "t", Request{Goal: "weather", MaxSteps: 4}, nil)
	if !errors.Is(err, ErrStepBudget) || !strings.Contains(err.Error(), "4 model turns without a final answer") {
		t.Fatalf("error %v, want the step budget", err)
	}
	if n := len(m.requests()); n != 4 || out.Turns != 4 || out.Error.Code != "budget_exceeded" || out.Status != StatusFailed {
		t.Errorf("%d requests, outcome %+v", n, out)
	}
}

func TestLoopTimeBudget(t *testing.T) {
	h := newTestHub(t, map[string]tool{"wx/current": echo}, nil)
	m := newScriptedModel(t, func(i int, req map[string]any) (int, string) { return 0, "" }) // never answers
	p := newLLMPlanner(t, h, m)
	p.Timeout = 20 * time.Millisecond
	out, err := p.Run(t.Context(), "t", Request{Goal: "weather"}, nil)
	if !errors.Is(err, ErrTimeBudget) || out.Error.Code != "timeout" {
		t.Fatalf("error %v (%+v), want the time budget", err, out.Error)
	}
}

func TestLoopModelErrors(t *testing.T) {
	h := newTestHub(t, map[string]tool{"wx/current": echo}, nil)
	m := newScriptedModel(t, func(i int, req map[string]any) (int, string) {
		return 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`
	})
	out, err := newLLMPlanner(t, h, m).Run(t.Context(), "t", Request{Goal: "weather"}, nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 401 || out.Error.Code != "upstream_error" || !strings.Contains(out.Error.Message, "Incorrect API key") {
		t.Errorf("error %v, outcome error %+v", err, out.Error)
	}
	if _, err := (&Planner{Gateway: h}).Run(t.Context(), "t", Request{Goal: "x", Mode: ModeLLM}, nil); !errors.Is(err, ErrNoModel) {
		t.Errorf("llm mode without a model: %v", err)
	}
}

// A model stuck in a loop asks for the same call again and again (its
// arguments written differently): the loop stops on the third identical turn
// instead of spending the whole step budget.
func TestLoopRepeatingModel(t *testing.T) {
	h := newTestHub(t, map[string]tool{"wx/current": echo}, nil)
	m := newScriptedModel(t, func(i int, req map[string]any) (int, string) {
		args := `{"city":"Paris","units":"metric"}`
		if i%2 == 0 {
			args = `{ "units": "metric", "city": "Paris" }`
		}
		return 200, toolCalls(call{fmt.Sprint("c", i), "wx__current", args})
	})
	out, err := newLLMPlanner(t, h, m).Run(t.Context(), "t", Request{Goal: "weather in Paris", MaxSteps: 8}, nil)
	if !errors.Is(err, ErrStepBudget) || !strings.Contains(err.Error(), "same tool calls 3 turns in a row (wx__current)") {
		t.Fatalf("error %v, want the loop stopped", err)
	}
	if n := len(m.requests()); n != 3 || out.Turns != 3 || out.Error.Code != "budget_exceeded" {
		t.Errorf("%d model requests, %d turns, error %+v; want 3", n, out.Turns, out.Error)
	}
	if n := len(h.Calls()); n != 2 {
		t.Errorf("%d tool calls, want 2 (the third turn is not run)", n)
	}
}

// A model that names a tool that does not exist is told so, with the
// closest real tools; nothing is sent upstream for it, and it recovers.
func TestLoopUnknownToolName(t *testing.T) {
	h := newTestHub(t, map[string]tool{"wx/current_weather|Current weather for a city": echo, "maps/route|Route between two places": echo}, nil)
	m := newScriptedModel(t, func(i int, req map[string]any) (int, string) {
		switch i {
		case 1:
			return 200, toolCalls(call{"c1", "get_weather_forecast", `{"city":"Paris"}`})
		case 2:
			return 200, toolCalls(call{"c2", "wx__current_weather", `{"city":"Paris"}`})
		}
		return 200, final("Paris: mild.")
	})
	out, err := newLLMPlanner(t, h, m).Run(t.Context(), "t", Request{Goal: "weather in Paris"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var fed map[string]ErrorBody
	if err := json.Unmarshal([]byte(toolMessages(m.requests()[1])["c1"]), &fed); err != nil {
		t.Fatal(err)
	}
	if e := fed["error"]; e.Code != "unknown_tool" || !strings.Contains(e.Message, `unknown tool "get_weather_forecast"`) || !strings.Contains(e.Message, "e.g. wx__current_weather") {
		t.Errorf("the model was told %+v", e)
	}
	calls := h.Calls()
	if len(calls) != 1 || calls[0].Name != "wx__current_weather" {
		t.Errorf("upstream calls %+v, want only the corrected one", calls)
	}
	if out.Answer != "Paris: mild." || out.Steps[0].Status != StatusFailed || out.Steps[1].Status != StatusOK {
		t.Errorf("outcome %+v", out)
	}
}
