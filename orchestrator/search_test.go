package orchestrator

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/registry"
)

type hitView struct {
	Name    string
	Matched []string
}

func views(hs []Hit) []hitView {
	out := make([]hitView, len(hs))
	for i, h := range hs {
		out[i] = hitView{h.Entry.Name, h.Matched}
	}
	return out
}

// Search ranks as the offline planner does: the tool each part of the
// goal asks for first, a capability before the vendor tools of its chain,
// what the tenant may not see left out, and why each hit matched.
func TestSearch(t *testing.T) {
	city := `{"city":{"type":"string","description":"City name"}}`
	tools := []schemaTool{
		{"wx", def("current_weather", "Current weather for a city.", city, "city")},
		{"wx2", def("forecast", "Weather forecast for the next days.", city, "city")},
		{"maps", def("route", "Driving route between two places.", `{"from":{"type":"string"},"to":{"type":"string"}}`, "from", "to")},
		{"img", def("generate_image", "Draw a picture from a text prompt.", `{"prompt":{"type":"string"}}`, "prompt")},
		{"secret", def("weather_leak", "Weather for insiders.", city, "city")},
	}
	caps := []registry.Capability{{Name: "weather.current", Description: "Current weather, with fallback.",
		InputSchema: json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`),
		Chain:       []registry.ChainStep{{Tool: "wx/current_weather"}}}}
	visible := func(tenant string, e registry.Entry) bool {
		return tenant != "acme" || e.Name != "secret__weather_leak"
	}
	p := offlineFor(t, newSchemaHub(t, tools, caps, visible))

	hits := p.Search("acme", "current weather in Paris", 3)
	want := []hitView{
		{"weather_current", []string{"current", "weather"}},
		{"wx__current_weather", []string{"current", "weather"}},
		{"wx2__forecast", []string{"weather"}},
	}
	if diff := cmp.Diff(want, views(hits)); diff != "" {
		t.Errorf("hits (-want +got):\n%s", diff)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score && i > 1 {
			t.Errorf("hit %d scores %v over hit %d's %v", i, hits[i].Score, i-1, hits[i-1].Score)
		}
	}
	for _, h := range p.Search("acme", "weather", 10) {
		if h.Entry.Name == "secret__weather_leak" {
			t.Errorf("acme finds a tool it may not see")
		}
	}
	if got := p.Search("other", "weather", 10); !containsHit(got, "secret__weather_leak") {
		t.Errorf("another tenant does not find secret__weather_leak: %v", views(got))
	}
	// Two parts: each part's tool comes first.
	got := views(p.Search("acme", "weather in Paris, then draw a cat", 2))
	if len(got) != 2 || got[1].Name != "img__generate_image" {
		t.Errorf("two-part goal: %v", got)
	}
	if got := p.Search("acme", "", 5); got != nil {
		t.Errorf("empty query: %v", views(got))
	}
	if got := p.Search("acme", "zzzz qqqq", 5); len(got) != 0 {
		t.Errorf("nothing in common: %v", views(got))
	}
}

func containsHit(hs []Hit, name string) bool {
	for _, h := range hs {
		if h.Entry.Name == name {
			return true
		}
	}
	return false
}

// A keyword added in the config is found once KeywordsRecheck has passed
// (the clock is the planner's); a catalog change at once.
func TestSearchSeesKeywordChanges(t *testing.T) {
	h := newSchemaHub(t, []schemaTool{{"acme", def("op7", "Runs operation seven.", `{"city":{"type":"string"}}`, "city")}}, nil, nil)
	p := offlineFor(t, h)
	now := time.Unix(1000, 0)
	p.Now = func() time.Time { return now }
	var mu sync.Mutex
	var words []string
	p.Keywords = func(e registry.Entry) []string {
		mu.Lock()
		defer mu.Unlock()
		return words
	}
	if got := p.Search("t", "smog in Hangzhou", 3); len(got) != 0 {
		t.Fatalf("before the keyword: %v", views(got))
	}
	mu.Lock()
	words = []string{"smog"}
	mu.Unlock()
	now = now.Add(KeywordsRecheck)
	if got := p.Search("t", "smog in Hangzhou", 3); len(got) != 1 || got[0].Entry.Name != "acme__op7" {
		t.Errorf("after the recheck: %v", views(got))
	}
	h.Catalog().SetVendorTools("beta", []registry.ToolDef{def("smog_index", "Smog index.", `{}`)})
	if got := p.Search("t", "smog index", 3); len(got) == 0 || got[0].Entry.Name != "beta__smog_index" {
		t.Errorf("after a catalog change: %v", views(got))
	}
}
