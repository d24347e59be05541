package orchestrator_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/internal/drill"
	. "github.com/toolhub/toolhub/orchestrator"
)

// labConfig is the embedded default config pointed at the lab's vendors:
// without addr, data, examples and outbound (the lab sets its own), every
// vendor over streamable HTTP, and loopback allowed.
func labConfig() string {
	var b strings.Builder
	skip := false
	for _, line := range strings.Split(string(config.DefaultYAML()), "\n") {
		if skip && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "#")) {
			continue
		}
		skip = false
		if k, _, _ := strings.Cut(line, ":"); k == "addr" || k == "data" || k == "examples" || k == "outbound" {
			skip = true
			continue
		}
		line = strings.ReplaceAll(line, "http://127.0.0.1:9100", "{{vendors}}")
		if strings.Contains(line, "transport: sse") { // the lab serves every vendor over streamable HTTP
			line = strings.ReplaceAll(strings.ReplaceAll(line, "transport: sse", "transport: http"), "/sse}", "/mcp}")
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("outbound: {allow: [127.0.0.0/8]}\n")
	return b.String()
}

func TestOfflinePlannerEndToEnd(t *testing.T) {
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: labConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// No rules: the offline planner reads the catalog (and its keywords).
	p := &Planner{Gateway: l.App.Gateway, Catalog: l.App.Catalog}
	h := httptest.NewServer(&Handler{Planner: p, Tenant: func(*http.Request) string { return "default" }})
	defer h.Close()

	// JSON.
	body := `{"goal": "plan a trip from Paris to Lyon: weather, route and restaurants", "mode": "rules"}`
	resp, err := http.Post(h.URL+"/v1/plan", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out Outcome
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || out.Status != StatusOK || out.Mode != ModeRules || len(out.Steps) != 4 {
		t.Fatalf("HTTP %d, outcome %+v", resp.StatusCode, out)
	}
	for _, s := range out.Steps[:3] {
		if s.Status != StatusOK || s.Provenance == nil || s.Provenance.Vendor == "" {
			t.Errorf("step %s: %+v", s.ID, s)
		}
	}
	route := out.Steps[1].Structured.(map[string]any)
	if route["distance_km"] == nil {
		t.Errorf("route %v has no distance_km", route)
	}
	for _, want := range []string{"weather_current: Lyon", "maps_route: Paris → Lyon", "places_restaurants: "} {
		if !strings.Contains(out.Answer, want) {
			t.Errorf("answer %q lacks %q", out.Answer, want)
		}
	}

	// Goals as users type them, in Chinese too, over the same catalog.
	for _, tt := range []struct {
		goal  string
		tools []string
		want  []string
	}{
		{"查一下成都的天气，然后推荐附近的餐厅", []string{"weather_current", "places_restaurants", IntegrateTool}, []string{"weather_current: 成都", "places_restaurants: "}},
		{"Plan my day in Nairobi tomorrow: check the weather, find a route to the airport and a restaurant nearby",
			[]string{"weather_current", "maps_route", "places_restaurants", IntegrateTool}, []string{"weather_current: Nairobi", "maps_route: Nairobi → airport"}},
		{"画一只在月球上的猫", []string{"image_generate"}, nil},
	} {
		out, err := p.Run(t.Context(), "default", Request{Goal: tt.goal}, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.goal, err)
		}
		var tools []string
		for _, s := range out.Steps {
			tools = append(tools, s.Tool)
			if s.Status != StatusOK {
				t.Errorf("%s: step %s: %+v", tt.goal, s.ID, s.Error)
			}
		}
		if !slices.Equal(tools, tt.tools) || out.Status != StatusOK {
			t.Errorf("%s: status %s, steps %v, want %v", tt.goal, out.Status, tools, tt.tools)
		}
		for _, w := range tt.want {
			if !strings.Contains(out.Answer, w) {
				t.Errorf("%s: answer %q lacks %q", tt.goal, out.Answer, w)
			}
		}
	}

	// Server-sent events through the client the CLI uses.
	var events []string
	got, err := Remote(t.Context(), nil, h.URL, nil, Request{Goal: "weather in Oslo"}, func(e Event) {
		events = append(events, e.Type+" "+e.Step)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusOK || !strings.Contains(got.Answer, "Oslo") {
		t.Errorf("outcome %+v", got)
	}
	if strings.Join(events, ",") != "plan ,step_started weather_current,step_finished weather_current" {
		t.Errorf("events %v", events)
	}

	// Errors.
	if _, err := Remote(t.Context(), nil, h.URL, nil, Request{Goal: "tell me a joke"}, nil); err == nil || !strings.Contains(err.Error(), "invalid_request: orchestrator: no tool fits the goal") {
		t.Errorf("no intent: %v", err)
	}
	for _, tt := range []struct{ body, want string }{
		{`{"goal": "x", "mode": "magic"}`, `mode \"magic\"`},
		{`{"goal": 3}`, "body must be JSON"},
		{`{"goal": "weather in Oslo", "mode": "llm"}`, "no LLM configured"},
	} {
		resp, err := http.Post(h.URL+"/v1/plan", "application/json", bytes.NewBufferString(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(b.String(), tt.want) {
			t.Errorf("%s: HTTP %d %s", tt.body, resp.StatusCode, b.String())
		}
	}

	// The LLM tool loop over the same hub: the model calls capabilities by
	// the names it was given.
	m := NewScriptedModel(t, func(i int, req map[string]any) (int, string) {
		if i == 1 {
			var names []string
			for _, tl := range req["tools"].([]any) {
				names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
			}
			if len(names) != 3 || !slices.Contains(names[:2], "weather_current") || !slices.Contains(names[:2], "places_restaurants") {
				t.Errorf("tools offered %v, want the two most relevant capabilities first", names)
			}
			return 200, ToolCalls(NewCall("c1", "weather_current", `{"city":"Oslo"}`), NewCall("c2", "places_restaurants", `{"near":"Oslo","limit":2}`))
		}
		return 200, Final("Cold in Oslo; try the two restaurants.")
	})
	p.Model, p.MaxTools = m.Client(t), 3
	llm, err := p.Run(t.Context(), "default", Request{Goal: "weather and restaurants in Oslo", Mode: ModeLLM}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if llm.Status != StatusOK || len(llm.Steps) != 2 || llm.Steps[0].Provenance.Capability == "" {
		t.Errorf("outcome %+v", llm)
	}
	if got := ToolMessages(m.Requests()[1])["c1"]; !strings.Contains(got, `"temp_c"`) {
		t.Errorf("weather result sent to the model: %s", got)
	}

	// A vendor failing degrades the plan instead of failing it.
	if err := l.SetMode("maps", drill.FaultFail); err != nil {
		t.Fatal(err)
	}
	p.Model = nil
	deg, err := p.Run(t.Context(), "default", Request{Goal: "trip from Paris to Lyon: weather and route"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if deg.Status != "degraded" || deg.Steps[1].Status != StatusFailed || !strings.Contains(deg.Answer, "maps_route: unavailable (") || !strings.Contains(deg.Answer, "weather_current: Lyon") {
		t.Errorf("outcome %s: %q %+v", deg.Status, deg.Answer, deg.Steps[1])
	}
}

// Keywords a vendor declares in the config reach the app's planner.
func TestVendorKeywordsReachThePlanner(t *testing.T) {
	cfg := strings.Replace(labConfig(), "  - id: places\n", "  - id: places\n    keywords: {search_restaurants: [宵夜, late-night snack]}\n", 1)
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, goal := range []string{"杭州有什么宵夜", "a late-night snack near Hangzhou"} {
		out, err := l.App.Planner.Run(t.Context(), "default", Request{Goal: goal}, nil)
		if err != nil {
			t.Fatalf("%s: %v", goal, err)
		}
		if len(out.Steps) != 1 || out.Steps[0].Tool != "places__search_restaurants" || out.Steps[0].Status != StatusOK {
			t.Errorf("%s: %s %+v", goal, out.Status, out.Steps)
		}
	}
}
