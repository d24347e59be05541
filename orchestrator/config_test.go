package orchestrator

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// TestConfigYAML is the shape internal/config reads under planner: in toolhub.yaml.
func TestConfigYAML(t *testing.T) {
	src := `
llm: {base_url: "https://api.openai.com/v1", model: gpt-4o-mini, timeout: 30s, retries: 3}
rules:
  context: ['from (?P<from>{place}) to (?P<to>{place})']
  intents:
    - name: weather
      tool: weather.current
      pattern: '(?i:weather)(?:\s+in\s+(?P<city>{place}))?'
      arguments: {city: '${city|to}'}
      required: [city]
      timeout: 2s
      retries: 1
    - {name: ms, tool: x, pattern: x, timeout: 1500}
`
	var cfg struct {
		LLM   Options `yaml:"llm"`
		Rules Rules   `yaml:"rules"`
	}
	if err := yaml.Unmarshal([]byte(src), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.LLM.Model != "gpt-4o-mini" || cfg.LLM.Timeout != 30*time.Second || cfg.LLM.Retries != 3 {
		t.Errorf("llm %+v", cfg.LLM)
	}
	if cfg.Rules.Intents[0].Timeout != Duration(2*time.Second) || cfg.Rules.Intents[1].Timeout != Duration(1500*time.Millisecond) {
		t.Errorf("timeouts %v %v", cfg.Rules.Intents[0].Timeout, cfg.Rules.Intents[1].Timeout)
	}
	r, err := compileRules(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.plan("trip from Paris to Nice, weather please")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"city": "Nice"}, p.Steps[0].Arguments); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	p2, err := New(Config{LLM: cfg.LLM}, newTestHub(t, map[string]tool{"x/y": echo}, nil), nil, "sk")
	// No rules configured: the offline planner reads the catalog alone.
	if err != nil || p2.Model == nil || p2.rules == nil || len(p2.Rules.Intents) != 0 {
		t.Errorf("New: %v %+v", err, p2)
	}
	if _, err := New(Config{LLM: Options{BaseURL: "http://x"}}, newTestHub(t, nil, nil), nil, ""); err == nil {
		t.Error("an LLM without a model accepted")
	}
	// Plans read timeouts as "2s" or milliseconds in JSON too.
	var s Step
	if err := json.Unmarshal([]byte(`{"id":"a","tool":"t","timeout":250}`), &s); err != nil || s.Timeout != Duration(250*time.Millisecond) {
		t.Errorf("timeout %v, %v", s.Timeout, err)
	}
	if err := json.Unmarshal([]byte(`{"id":"a","tool":"t","timeout":"soon"}`), &s); err == nil {
		t.Error("timeout \"soon\" accepted")
	}
}
