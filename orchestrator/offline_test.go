package orchestrator

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// schemaHub is a real gateway over in-process vendor tools with real input
// schemas, recording calls.
type schemaHub struct {
	*hub.Gateway
	mu    sync.Mutex
	calls []string
}

type schemaTool struct {
	vendor string
	def    registry.ToolDef
}

func newSchemaHub(t testing.TB, tools []schemaTool, caps []registry.Capability, visible func(tenant string, e registry.Entry) bool) *schemaHub {
	t.Helper()
	h := &schemaHub{}
	cat := registry.NewCatalog()
	byVendor := map[string][]registry.ToolDef{}
	for _, st := range tools {
		byVendor[st.vendor] = append(byVendor[st.vendor], st.def)
	}
	for v, defs := range byVendor {
		if errs := cat.SetVendorTools(v, defs); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	if errs := cat.SetCapabilities(caps); len(errs) > 0 {
		t.Fatal(errs)
	}
	ups := hub.UpstreamsFunc(func(vendor string) (hub.Invoker, bool) {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			h.mu.Lock()
			h.calls = append(h.calls, c.Name)
			h.mu.Unlock()
			b, _ := json.Marshal(c.Arguments)
			return &hub.Result{Structured: c.Arguments, Content: []mcp.Content{mcp.NewTextContent(c.Tool.Def.Name + " " + string(b))}}, nil
		}), true
	})
	h.Gateway = hub.NewGateway(cat, ups, &hub.Options{Visible: visible})
	return h
}

func (h *schemaHub) Calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

func def(name, desc, props string, required ...string) registry.ToolDef {
	req, _ := json.Marshal(required)
	if required == nil {
		req = []byte("[]")
	}
	return registry.ToolDef{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object","properties":` + props + `,"required":` + string(req) + `}`)}
}

func offlineFor(t testing.TB, h *schemaHub) *Planner {
	p := &Planner{Gateway: h, Catalog: h.Catalog()}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	return p
}

func stepsOf(p *Plan) []string {
	var out []string
	for _, s := range p.Steps {
		if s.Tool == IntegrateTool {
			continue
		}
		b, _ := json.Marshal(s.Arguments)
		out = append(out, s.Tool+" "+string(b))
	}
	return out
}

// A tool whose name and description say nothing a user would say is found
// through the keywords its vendor declares, in any language; changing the
// keywords alone (no catalog change) is seen at once.
func TestOfflineKeywords(t *testing.T) {
	h := newSchemaHub(t, []schemaTool{{"acme", def("op7", "Runs operation seven.", `{"city":{"type":"string","description":"City"}}`, "city")}}, nil, nil)
	p := offlineFor(t, h)
	plan, un := p.PlanOffline("t", "杭州的雾霾严重吗")
	if len(plan.Steps) != 0 || len(un) != 1 || un[0].Reason != ReasonNoMatch {
		t.Fatalf("without keywords: steps %v, unplanned %+v", stepsOf(plan), un)
	}
	var mu sync.Mutex
	words := []string{"雾霾", "smog"}
	p.Keywords = func(e registry.Entry) []string {
		mu.Lock()
		defer mu.Unlock()
		if e.Tool.Vendor == "acme" && e.Tool.Def.Name == "op7" {
			return words
		}
		return nil
	}
	for _, goal := range []string{"杭州的雾霾严重吗", "is the smog bad in Hangzhou"} {
		plan, un = p.PlanOffline("t", goal)
		want := `acme__op7 {"city":"杭州"}`
		if !strings.Contains(goal, "杭州") {
			want = `acme__op7 {"city":"Hangzhou"}`
		}
		if diff := cmp.Diff([]string{want}, stepsOf(plan)); diff != "" || len(un) != 0 {
			t.Errorf("%s: (-want +got)\n%s unplanned %+v", goal, diff, un)
		}
	}
	mu.Lock()
	words = nil
	mu.Unlock()
	if plan, _ := p.PlanOffline("t", "杭州的雾霾严重吗"); len(plan.Steps) != 0 {
		t.Errorf("keywords removed, still planned %v", stepsOf(plan))
	}
	// A capability carries its own keywords.
	h2 := newSchemaHub(t, []schemaTool{{"acme", def("op7", "Runs operation seven.", `{"city":{"type":"string"}}`, "city")}},
		[]registry.Capability{{Name: "air.quality", Description: "Operation seven, governed.", Keywords: []string{"雾霾"},
			InputSchema: json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`),
			Chain:       []registry.ChainStep{{Tool: "acme/op7"}}}}, nil)
	if plan, _ := offlineFor(t, h2).PlanOffline("t", "杭州的雾霾严重吗"); !slicesEqual(stepsOf(plan), []string{`air_quality {"city":"杭州"}`}) {
		t.Errorf("capability keywords: %v", stepsOf(plan))
	}
}

func slicesEqual(a, b []string) bool { return cmp.Equal(a, b) }

// A tenant that may not use some of the tools that fit a goal gets the
// parts it can do, and is told about the rest; nothing is sent to a tool it
// may not see.
func TestOfflineInvisibleTools(t *testing.T) {
	tools := []schemaTool{
		{"wx", def("current_weather", "Current weather for a city.", `{"city":{"type":"string","description":"City name"}}`, "city")},
		{"maps", def("route", "Route between two places.", `{"from":{"type":"string"},"to":{"type":"string"}}`, "from", "to")},
	}
	visible := func(tenant string, e registry.Entry) bool { return tenant == "full" || e.Name != "maps__route" }
	h := newSchemaHub(t, tools, nil, visible)
	p := offlineFor(t, h)
	goal := "weather in Paris and a route from Paris to Lyon"

	out, err := p.Run(t.Context(), "basic", Request{Goal: goal}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != StatusPartial || len(out.Steps) != 1 || out.Steps[0].Tool != "wx__current_weather" || out.Steps[0].Status != StatusOK {
		t.Fatalf("outcome %s, steps %+v", out.Status, out.Steps)
	}
	if len(out.Unplanned) != 1 || out.Unplanned[0].Reason != ReasonNotVisible || out.Unplanned[0].Clause != "a route from Paris to Lyon" ||
		strings.Contains(out.Unplanned[0].Message, "maps__route") {
		t.Errorf("unplanned %+v (the hidden tool's name must not be shown)", out.Unplanned)
	}
	if !strings.Contains(out.Answer, `current_weather {"city":"Paris"}`) || !strings.Contains(out.Answer, `not done: "a route from Paris to Lyon": the catalog has 1 tool(s) for this, but this tenant may not use them`) {
		t.Errorf("answer %q", out.Answer)
	}
	if diff := cmp.Diff([]string{"wx__current_weather"}, h.Calls()); diff != "" {
		t.Errorf("calls (-want +got)\n%s", diff)
	}

	full, err := p.Run(t.Context(), "full", Request{Goal: goal}, nil)
	if err != nil || full.Status != StatusOK || len(full.Steps) != 3 {
		t.Errorf("tenant full: %v %s %+v", err, full.Status, full.Steps)
	}
}

// Nothing fits: a clear status with the closest tools, a 4xx and never a
// 5xx, and no call.
func TestOfflineNoMatchOverHTTP(t *testing.T) {
	h := newSchemaHub(t, []schemaTool{
		{"wx", def("current_weather", "Current weather for a city.", `{"city":{"type":"string"}}`, "city")},
		{"fun", def("pun", "A pun about a word.", `{"word":{"type":"string"}}`, "word")},
	}, nil, nil)
	srv := httptest.NewServer(&Handler{Planner: offlineFor(t, h)})
	defer srv.Close()
	for _, tt := range []struct {
		goal, reason string
		suggestions  []string
	}{
		{"tell me a joke", ReasonNoMatch, nil},
		{"给我讲个笑话", ReasonNoMatch, nil},
		{"what's the weather like?", ReasonMissing, nil},
	} {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"goal":`+jsonString(tt.goal)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		var out Outcome
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || out.Status != StatusNoMatch || out.Error == nil || out.Error.Code != "invalid_request" {
			t.Errorf("%s: HTTP %d, status %q, error %+v", tt.goal, resp.StatusCode, out.Status, out.Error)
		}
		if len(out.Unplanned) != 1 || out.Unplanned[0].Reason != tt.reason || !strings.Contains(out.Answer, "could not plan any part of the goal") {
			t.Errorf("%s: unplanned %+v, answer %q", tt.goal, out.Unplanned, out.Answer)
		}
	}
	if n := len(h.Calls()); n != 0 {
		t.Errorf("%d calls for goals nothing fits", n)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// With a model configured but down, auto mode answers from the catalog
// and says so.
func TestAutoFallsBackToOfflineWhenTheModelIsDown(t *testing.T) {
	h := newSchemaHub(t, []schemaTool{{"wx", def("current_weather", "Current weather for a city.", `{"city":{"type":"string"}}`, "city")}}, nil, nil)
	m := newScriptedModel(t, func(int, map[string]any) (int, string) { return 503, "upstream sick" })
	p := &Planner{Gateway: h, Catalog: h.Catalog(), Model: m.client(t)}
	out, err := p.Run(t.Context(), "t", Request{Goal: "北京天气"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Mode != ModeRules || out.Status != StatusOK || !strings.Contains(out.Note, "HTTP 503") || len(out.Steps) != 1 || out.Steps[0].Tool != "wx__current_weather" {
		t.Errorf("outcome %+v", out)
	}
	if n := len(m.requests()); n != 3 {
		t.Errorf("%d model requests, want 3 (the client's retries)", n)
	}
	// An explicit llm mode reports the model's failure instead.
	if _, err := p.Run(t.Context(), "t", Request{Goal: "北京天气", Mode: ModeLLM}, nil); err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Errorf("mode llm: %v", err)
	}
}

func TestSplitClauses(t *testing.T) {
	ix := buildIndex(1, nil, nil)
	for _, tt := range []struct {
		goal string
		want []string
	}{
		{"weather, route and restaurants in Nairobi", []string{"weather", "route", "restaurants in Nairobi"}},
		{"check the weather and then find a restaurant; also draw a cat", []string{"check the weather", "find a restaurant", "draw a cat"}},
		{"add 3 and 5", []string{"add 3 and 5"}},
		{`repeat after me: "hello, world"`, []string{`repeat after me: "hello, world"`}},
		{"if it rains, find a cafe", []string{"it rains", "find a cafe"}},
		{"北京天气，然后推荐附近的餐厅、再画一只猫", []string{"北京天气", "推荐附近的餐厅", "画一只猫"}},
		{"查天气顺便找餐厅还有路线", []string{"查天气", "找餐厅", "路线"}},
		{"把3和4加起来", []string{"把3和4加起来"}},
	} {
		var got []string
		for _, c := range splitClauses(tokenize(tt.goal, ix.dict)) {
			got = append(got, tt.goal[c.start:c.end])
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tt.goal, diff)
		}
	}
}

func TestHanNumbers(t *testing.T) {
	for s, want := range map[string]int{"三": 3, "十": 10, "十二": 12, "三十": 30, "两百五十": 250, "一千零五": 1005, "三万": 30000,
		"叁仟伍佰": 3500, "壹萬贰仟": 12000, "仨": 3} {
		if v, n := hanNumber(s); v != want || n != len(s) {
			t.Errorf("%s: %d (%d bytes), want %d", s, v, n, want)
		}
	}
	// A cheque's numeral alone is a name (伍, 陆家嘴), not a number.
	for _, s := range []string{"伍", "陆家嘴"} {
		if v, n := hanNumber(s); n != 0 {
			t.Errorf("%s: %d (%d bytes), want no number", s, v, n)
		}
	}
}

// FuzzPlanOffline: any goal gives a plan that validates (known tools,
// arguments that fit their schemas) or clauses reported as not done; never
// a panic.
func FuzzPlanOffline(f *testing.F) {
	for _, g := range []string{"weather in Paris and a route from Paris to Lyon", "北京明天天气怎么样，顺便画一只猫", "add 3 and 5", `echo "hi"`,
		"从上海开车到苏州要多久", "十二加三十", "'", "“", "和和和", "from to", "in the", "上上上海", "1.2.3 plus -4", "\x00\xff",
		"subject: x, body: y", "主题是：", "3月20号 10:00 $5 €", "if it rains, find", "如果下雨的话，就", "twenty five hundred million", "1,2,3,444", "天汽天汽"} {
		f.Add(g)
	}
	h := newSchemaHub(f, []schemaTool{
		{"wx", def("current_weather", "Current weather for a city.", `{"city":{"type":"string","minLength":1,"description":"City name"},"units":{"enum":["metric","imperial"]}}`, "city")},
		{"maps", def("route", "Route between two places.", `{"from":{"type":"string"},"to":{"type":"string"},"mode":{"enum":["driving","walking"]}}`, "from", "to")},
		{"img", def("draw", "Draw an image from a prompt.", `{"prompt":{"type":"string","minLength":1}}`, "prompt")},
		{"calc", def("sum", "Sum of two numbers.", `{"a":{"type":"number"},"b":{"type":"integer","maximum":100}}`, "a", "b")},
		{"calc", def("echo", "Echo a message.", `{"message":{"type":"string"}}`, "message")},
	}, nil, nil)
	p := offlineFor(f, h)
	f.Fuzz(func(t *testing.T, goal string) {
		plan, unplanned := p.PlanOffline("t", goal)
		if len(plan.Steps) == 0 {
			return
		}
		if err := plan.Validate("t", h.Lookup); err != nil {
			t.Fatalf("%q: %v", goal, err)
		}
		for _, s := range plan.Steps {
			if s.Tool == IntegrateTool {
				continue
			}
			e, _ := h.Lookup("t", s.Tool)
			if err := e.Tool.ValidateInput(s.Arguments); err != nil {
				t.Fatalf("%q: step %s %v: %v", goal, s.Tool, s.Arguments, err)
			}
		}
		_ = unplanned
	})
}

// With MaxTools, the model is offered the tools the goal is about, read
// as the offline planner reads it: Chinese included.
func TestLLMOfferedRelevantTools(t *testing.T) {
	h := newSchemaHub(t, []schemaTool{
		{"a", def("alpha", "Alpha numbers.", `{}`)},
		{"b", def("beta", "Beta letters.", `{}`)},
		{"maps", def("route", "Route between two places.", `{"from":{"type":"string"},"to":{"type":"string"}}`, "from", "to")},
		{"wx", def("current_weather", "Current weather for a city.", `{"city":{"type":"string"}}`, "city")},
	}, nil, nil)
	m := newScriptedModel(t, func(int, map[string]any) (int, string) { return 200, final("ok") })
	p := &Planner{Gateway: h, Catalog: h.Catalog(), Model: m.client(t), MaxTools: 2}
	if _, err := p.Run(t.Context(), "t", Request{Goal: "北京天气怎么样，再查一下去天津的路线"}, nil); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range m.requests()[0]["tools"].([]any) {
		names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	if diff := cmp.Diff([]string{"wx__current_weather", "maps__route"}, names); diff != "" {
		t.Errorf("tools offered (-want +got)\n%s", diff)
	}
}

// TestUnsay checks that a correction takes back the value of its kind
// before it, and that the goal keeps its length (values are read back
// from the goal as typed).
func TestUnsay(t *testing.T) {
	for _, tt := range []struct{ goal, gone, kept string }{
		{"a call on Tuesday at 10, no wait, make that Thursday", "Tuesday", "Thursday"},
		{"sushi places near Union Square, no wait, make that ramen", "sushi", "ramen"},
		{"walking route from home to school no wait from the ymca to school", "home", "ymca"},
		{"flying to Oslo on the 2nd of April, no sorry the 3rd", "2nd", "3rd"},
		{"周二下午三点开会 不对 是周四", "周二", "周四"},
	} {
		got := unsay(tt.goal)
		if len(got) != len(tt.goal) || strings.Contains(got, tt.gone) || !strings.Contains(got, tt.kept) {
			t.Errorf("unsay(%q) = %q: want %q gone, %q kept, the same length", tt.goal, got, tt.gone, tt.kept)
		}
	}
	for _, goal := range []string{"I mean it, find pizza near Soho", "no wait times at the DMV?", "weather in Oslo"} {
		if got := unsay(goal); got != goal {
			t.Errorf("unsay(%q) = %q, want it as typed (nothing of its kind to take back)", goal, got)
		}
	}
}

// TestUnlist checks that the marks of a list's items are blanked, not
// read as numbers, and that nothing else is.
func TestUnlist(t *testing.T) {
	for goal, want := range map[string]string{
		"convert:\n1. 250 km to miles\n2) 5 gal to l": "convert:\n   250 km to miles\n   5 gal to l",
		"todo:\n- weather in Oslo\n• time in Rome":    "todo:\n  weather in Oslo\n    time in Rome", // (• is three bytes)
		"it's -4 degrees here":                        "it's -4 degrees here",
		"1. weather in Oslo":                          "1. weather in Oslo", // one line: no list
		"1. 腾讯股价 2. 英伟达":                              ";  腾讯股价 ;  英伟达",     // a list on one line: its marks separate
		"flights for 2. from Oslo":                    "flights for 2. from Oslo",
	} {
		if got := unlist(goal); got != want {
			t.Errorf("unlist(%q) = %q, want %q", goal, got, want)
		}
	}
}
