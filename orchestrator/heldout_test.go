package orchestrator_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	. "github.com/toolhub/toolhub/orchestrator"
	"github.com/toolhub/toolhub/registry"
	"go.yaml.in/yaml/v3"
)

// The held-out sets (testdata/heldout_*.yaml) were written before the
// planner was changed for them and the planner is not tuned on them: they
// measure how it reads goals nobody wrote beside it. testdata/tuning.yaml
// is the set it is tuned on, besides eval.yaml. The blind2 sets
// (testdata/blind2_*.yaml) were written by someone who never read the
// planner and were committed before the planner was changed for them.

// heldOutNow is the reference time of the held-out and tuning sets'
// relative dates: a Wednesday.
var heldOutNow = time.Date(2027, 3, 10, 9, 0, 0, 0, time.UTC)

func loadCases(t testing.TB, file string) []evalCase {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cases []evalCase
	if err := yaml.Unmarshal(b, &cases); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return cases
}

// kitCatalog is the second catalog: testdata/catalog2-tools.json, twelve
// tools of vendor "kit" and the keywords an operator gave them.
func kitCatalog(t testing.TB) (*registry.Catalog, func(registry.Entry) []string) {
	b, err := os.ReadFile("testdata/catalog2-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Vendor   string              `json:"vendor"`
		Tools    []registry.ToolDef  `json:"tools"`
		Keywords map[string][]string `json:"keywords"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	cat := registry.NewCatalog()
	if errs := cat.SetVendorTools(f.Vendor, f.Tools); len(errs) > 0 {
		t.Fatal(errs)
	}
	return cat, func(e registry.Entry) []string { return f.Keywords[e.Tool.Def.Name] }
}

// heldOutPlanners are evalPlanners plus the second catalog, all on the
// sets' reference clock.
func heldOutPlanners(t testing.TB) map[string]*Planner {
	now := func() time.Time { return heldOutNow }
	exCat, kw := exampleCatalog(t)
	kitCat, kitKw := kitCatalog(t)
	out := map[string]*Planner{}
	for name, c := range map[string]struct {
		cat *registry.Catalog
		kw  func(registry.Entry) []string
	}{"example": {exCat, kw}, "everything": {everythingCatalog(t), nil}, "kit": {kitCat, kitKw}} {
		p := &Planner{Gateway: hub.NewGateway(c.cat, noUpstreams, nil), Catalog: c.cat, Keywords: c.kw, Now: now}
		if err := p.Init(); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

// setScore counts, per catalog and language, the goals whose plan has the
// right tools (and unplanned reasons), those also with the right arguments,
// and the refusals that were honest.
type setScore struct {
	goals, tools, args, refusals, honest int
}

func (s setScore) String() string {
	pct := func(n int) float64 { return 100 * float64(n) / float64(max(1, s.goals)) }
	return fmt.Sprintf("%d goals, right tools %d (%.0f%%), right arguments %d (%.0f%%), honest refusals %d/%d",
		s.goals, s.tools, pct(s.tools), s.args, pct(s.args), s.honest, s.refusals)
}

// toolsRight is grade without the arguments: the right tools, as many
// times as wanted, and the right unplanned reasons.
func toolsRight(c evalCase, plan *Plan, unplanned []Unplanned) bool {
	stripped := c
	stripped.Want = nil
	for _, w := range c.Want {
		stripped.Want = append(stripped.Want, want{Tool: w.Tool})
	}
	return grade(stripped, plan, unplanned).right
}

// scoreSet plans every case and scores it by "catalog/lang"; the goals
// graded wrong are logged.
func scoreSet(t *testing.T, name string, cases []evalCase, planners map[string]*Planner) map[string]*setScore {
	out := map[string]*setScore{}
	for _, c := range cases {
		p := planners[c.Catalog]
		if p == nil {
			t.Fatalf("%s: goal %q: unknown catalog %q", name, c.Goal, c.Catalog)
		}
		plan, unplanned := p.PlanOffline("default", c.Goal)
		lang := "en"
		if strings.ContainsFunc(c.Goal, func(r rune) bool { return r >= 0x4e00 && r <= 0x9fff }) {
			lang = "zh"
		}
		k := c.Catalog + "/" + lang
		if out[k] == nil {
			out[k] = &setScore{}
		}
		s := out[k]
		s.goals++
		r := grade(c, plan, unplanned)
		if toolsRight(c, plan, unplanned) {
			s.tools++
		}
		if r.right {
			s.args++
		} else {
			t.Logf("%s: not right: %q: %s", name, c.Goal, r.why)
		}
		if len(c.Want) == 0 {
			s.refusals++
			if steps(plan) == 0 && len(unplanned) > 0 {
				s.honest++
			} else {
				t.Errorf("%s: refusal %q planned %d steps, unplanned %v", name, c.Goal, steps(plan), unplanned)
			}
		}
	}
	return out
}

func steps(plan *Plan) int {
	n := 0
	for _, s := range plan.Steps {
		if s.Tool != IntegrateTool {
			n++
		}
	}
	return n
}

func logScores(t *testing.T, name string, scores map[string]*setScore) {
	keys := make([]string, 0, len(scores))
	for k := range scores {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("offline planner %s %s: %s", name, k, scores[k])
	}
}

// TestHeldOut plans the held-out sets and reports them apart from the
// tuning set (scripts/bench.sh copies the lines into docs/benchmarks.md).
// Every refusal must be honest: no step, the clause reported; and each
// held-out catalog and language stays above a floor.
func TestHeldOut(t *testing.T) {
	planners := heldOutPlanners(t)
	for _, set := range []struct{ name, file string }{
		{"held-out default", "testdata/heldout_default.yaml"},
		{"held-out catalog2", "testdata/heldout_catalog2.yaml"},
		{"held-out classes", "testdata/heldout_classes.yaml"},
		{"tuning", "testdata/tuning.yaml"},
		{"blind2 default", "testdata/blind2_default.yaml"},
		{"blind2 catalog2", "testdata/blind2_catalog2.yaml"},
		{"blind3 default", "testdata/blind3_default.yaml"},
		{"blind3 catalog2", "testdata/blind3_catalog2.yaml"},
		{"blind4 default", "testdata/blind4_default.yaml"},
		{"blind4 catalog2", "testdata/blind4_catalog2.yaml"},
		{"blind5 default", "testdata/blind5_default.yaml"},
		{"blind5 catalog2", "testdata/blind5_catalog2.yaml"},
		{"blind6 default", "testdata/blind6_default.yaml"},
		{"blind6 catalog2", "testdata/blind6_catalog2.yaml"},
		{"blind7 default", "testdata/blind7_default.yaml"},
		{"blind7 catalog2", "testdata/blind7_catalog2.yaml"},
		{"blind8 default", "testdata/blind8_default.yaml"},
		{"blind8 catalog2", "testdata/blind8_catalog2.yaml"},
		{"blind9 default", "testdata/blind9_default.yaml"},
		{"blind9 catalog2", "testdata/blind9_catalog2.yaml"},
		{"blind10 default", "testdata/blind10_default.yaml"},
		{"blind10 catalog2", "testdata/blind10_catalog2.yaml"},
		{"blind11 default", "testdata/blind11_default.yaml"},
		{"blind11 catalog2", "testdata/blind11_catalog2.yaml"},
		{"blind12 default", "testdata/blind12_default.yaml"},
		{"blind12 catalog2", "testdata/blind12_catalog2.yaml"},
		{"blind13 default", "testdata/blind13_default.yaml"},
		{"blind13 catalog2", "testdata/blind13_catalog2.yaml"},
		{"blind14 default", "testdata/blind14_default.yaml"},
		{"blind14 catalog2", "testdata/blind14_catalog2.yaml"},
		{"blind15 default", "testdata/blind15_default.yaml"},
		{"blind15 catalog2", "testdata/blind15_catalog2.yaml"},
		{"blind16 default", "testdata/blind16_default.yaml"},
		{"blind16 catalog2", "testdata/blind16_catalog2.yaml"},
		{"blind17 default", "testdata/blind17_default.yaml"},
		{"blind17 catalog2", "testdata/blind17_catalog2.yaml"},
	} {
		cases := loadCases(t, set.file)
		if strings.HasPrefix(set.name, "held-out") && set.name != "held-out classes" && len(cases) < 100 {
			t.Fatalf("%s: %d goals, want at least 100", set.file, len(cases))
		}
		scores := scoreSet(t, set.name, cases, planners)
		logScores(t, set.name, scores)
		// Blind sets after the second are measured, not held to a floor:
		// each is first run as it came, then read for classes to fix.
		if set.name == "tuning" || strings.HasPrefix(set.name, "blind") && !strings.HasPrefix(set.name, "blind2") {
			continue
		}
		floorTools, floorArgs := heldOutFloorTools, heldOutFloorArgs
		if set.name == "held-out classes" || strings.HasPrefix(set.name, "blind2") {
			// The classes and blind2 sets are held to issue 33's targets.
			floorTools, floorArgs = 90, 85
		}
		for k, s := range scores {
			// A floor under today's figures (issue 33's targets are 90% and
			// 85%): the held-out sets guard against regressions.
			if 100*s.tools < floorTools*s.goals || 100*s.args < floorArgs*s.goals {
				t.Errorf("%s %s: %s, want at least %d%% right tools and %d%% right arguments", set.name, k, s, floorTools, floorArgs)
			}
		}
	}
}

const heldOutFloorTools, heldOutFloorArgs = 85, 80
