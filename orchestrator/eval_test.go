package orchestrator_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/config"
	. "github.com/toolhub/toolhub/orchestrator"
	"github.com/toolhub/toolhub/registry"
	"go.yaml.in/yaml/v3"
)

// evalCase is one goal of testdata/eval.yaml.
type evalCase struct {
	Goal      string   `yaml:"goal"`
	Catalog   string   `yaml:"catalog"`
	Want      []want   `yaml:"want"`
	Unplanned []string `yaml:"unplanned"`
}

type want struct {
	Tool string         `yaml:"tool"`
	Args map[string]any `yaml:"args"`
}

func loadEval(t testing.TB) []evalCase {
	b, err := os.ReadFile("testdata/eval.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []evalCase
	if err := yaml.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// exampleCatalog is the default config's catalog: its capabilities (with
// their keywords) over the example vendors' real tool lists.
func exampleCatalog(t testing.TB) (*registry.Catalog, func(registry.Entry) []string) {
	cfg, err := config.Parse(config.DefaultYAML())
	if err != nil {
		t.Fatal(err)
	}
	cat := registry.NewCatalog()
	for _, name := range vendors.Names() {
		v, err := vendors.New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		var defs []registry.ToolDef
		for _, st := range v.MCPServer().ListTools() {
			b, err := json.Marshal(st.Tool)
			if err != nil {
				t.Fatal(err)
			}
			var d registry.ToolDef
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			defs = append(defs, d)
		}
		slices.SortFunc(defs, func(a, b registry.ToolDef) int { return strings.Compare(a.Name, b.Name) })
		if errs := cat.SetVendorTools(name, defs); len(errs) > 0 {
			t.Fatal(errs)
		}
		v.Close()
	}
	caps, err := cfg.RegistryCapabilities()
	if err != nil {
		t.Fatal(err)
	}
	if errs := cat.SetCapabilities(caps); len(errs) > 0 {
		t.Fatal(errs)
	}
	specs := map[string]registry.Vendor{}
	for _, v := range cfg.Vendors {
		specs[v.ID] = v
	}
	return cat, func(e registry.Entry) []string { return specs[e.Tool.Vendor].Keywords[e.Tool.Def.Name] }
}

// everythingTools reads the checked-in tool list of server-everything.
func everythingTools(t testing.TB) []registry.ToolDef {
	b, err := os.ReadFile("testdata/everything-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tools []registry.ToolDef `json:"tools"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Tools
}

func everythingCatalog(t testing.TB) *registry.Catalog {
	cat := registry.NewCatalog()
	if errs := cat.SetVendorTools("everything", everythingTools(t)); len(errs) > 0 {
		t.Fatal(errs)
	}
	return cat
}

// noUpstreams is a gateway that plans but never calls: the evaluation
// checks plans, not vendors.
var noUpstreams = hub.UpstreamsFunc(func(string) (hub.Invoker, bool) { return nil, false })

func offlinePlanner(t testing.TB, cat *registry.Catalog, kw func(registry.Entry) []string) *Planner {
	p := &Planner{Gateway: hub.NewGateway(cat, noUpstreams, nil), Catalog: cat, Keywords: kw}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	return p
}

// evalResult grades one goal's plan.
type evalResult struct {
	right bool
	wrong []string // tools called that the goal does not want
	why   string
}

func grade(c evalCase, plan *Plan, unplanned []Unplanned) evalResult {
	var r evalResult
	allowed := map[string]bool{}
	for _, w := range c.Want {
		for _, alt := range strings.Split(w.Tool, "|") {
			allowed[alt] = true
		}
	}
	var steps []Step
	for _, s := range plan.Steps {
		if s.Tool == IntegrateTool {
			continue
		}
		steps = append(steps, s)
		if !allowed[s.Tool] {
			r.wrong = append(r.wrong, s.Tool)
		}
	}
	var problems []string
	used := make([]bool, len(steps))
	for _, w := range c.Want {
		found := false
		for i, s := range steps {
			if !used[i] && slices.Contains(strings.Split(w.Tool, "|"), s.Tool) && argsMatch(w.Args, s.Arguments) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("no step %s %v", w.Tool, w.Args))
		}
	}
	for i, s := range steps {
		if !used[i] {
			problems = append(problems, fmt.Sprintf("extra step %s %v", s.Tool, s.Arguments))
		}
	}
	var reasons []string
	for _, u := range unplanned {
		reasons = append(reasons, u.Reason)
	}
	if !slices.Equal(sortedCopy(reasons), sortedCopy(c.Unplanned)) {
		problems = append(problems, fmt.Sprintf("unplanned %v, want %v", unplanned, c.Unplanned))
	}
	r.right = len(problems) == 0
	if !r.right {
		var got []string
		for _, s := range steps {
			got = append(got, fmt.Sprintf("%s %v", s.Tool, s.Arguments))
		}
		r.why = strings.Join(problems, "; ") + " — planned: " + strings.Join(got, ", ")
	}
	return r
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func argsMatch(want, got map[string]any) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok || !valueMatch(w, g) {
			return false
		}
	}
	return true
}

func valueMatch(w, g any) bool {
	switch w := w.(type) {
	case []any:
		for _, x := range w {
			if valueMatch(x, g) {
				return true
			}
		}
		return false
	case int:
		return numEq(float64(w), g)
	case float64:
		return numEq(w, g)
	case string:
		gs, ok := g.(string)
		if !ok {
			return false
		}
		if c, ok := strings.CutPrefix(w, "~"); ok {
			return strings.Contains(strings.ToLower(gs), strings.ToLower(c))
		}
		return strings.EqualFold(strings.TrimSpace(gs), w)
	}
	return fmt.Sprint(w) == fmt.Sprint(g)
}

func numEq(w float64, g any) bool {
	switch g := g.(type) {
	case int:
		return float64(g) == w
	case float64:
		return math.Abs(g-w) < 1e-9
	}
	return false
}

// evalPlanners builds one planner per catalog of the evaluation set.
func evalPlanners(t testing.TB) map[string]*Planner {
	exCat, kw := exampleCatalog(t)
	return map[string]*Planner{
		"example":    offlinePlanner(t, exCat, kw),
		"everything": offlinePlanner(t, everythingCatalog(t), nil),
	}
}

// TestEval plans every goal of testdata/eval.yaml and holds the offline
// planner to its targets: at least 95% exactly right, no wrong tool.
func TestEval(t *testing.T) {
	cases := loadEval(t)
	if len(cases) < 40 {
		t.Fatalf("%d goals in the evaluation set, want at least 40", len(cases))
	}
	planners := evalPlanners(t)
	right, wrong := 0, 0
	byLang := map[string][2]int{}
	for _, c := range cases {
		p := planners[c.Catalog]
		if p == nil {
			t.Fatalf("goal %q: unknown catalog %q", c.Goal, c.Catalog)
		}
		plan, unplanned := p.PlanOffline("default", c.Goal)
		r := grade(c, plan, unplanned)
		lang := "en"
		if strings.ContainsFunc(c.Goal, func(r rune) bool { return r >= 0x4e00 && r <= 0x9fff }) {
			lang = "zh"
		}
		n := byLang[c.Catalog+"/"+lang]
		n[1]++
		if r.right {
			right++
			n[0]++
		} else {
			t.Logf("not right: %q: %s", c.Goal, r.why)
		}
		byLang[c.Catalog+"/"+lang] = n
		if len(r.wrong) > 0 {
			wrong += len(r.wrong)
			t.Errorf("wrong tool for %q: %v", c.Goal, r.wrong)
		}
	}
	pct := 100 * float64(right) / float64(len(cases))
	var parts []string
	for _, k := range []string{"example/en", "example/zh", "everything/en", "everything/zh"} {
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, byLang[k][0], byLang[k][1]))
	}
	t.Logf("offline planner evaluation: %d goals, %d exactly right (%.1f%%), %d wrong tools; %s", len(cases), right, pct, wrong, strings.Join(parts, ", "))
	if pct < 95 {
		t.Errorf("%.1f%% exactly right, want at least 95%%", pct)
	}
}
