package orchestrator

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/hub"
)

func TestPlanValidate(t *testing.T) {
	h := newTestHub(t, map[string]tool{"wx/current": echo}, nil)
	s := func(id string, deps ...string) Step { return Step{ID: id, Tool: "wx__current", DependsOn: deps} }
	tests := []struct {
		name  string
		steps []Step
		want  string
	}{
		{"ok", []Step{s("a"), s("b", "a"), {ID: "c", Tool: IntegrateTool, DependsOn: []string{"a", "b"}}}, ""},
		{"empty", nil, "no steps"},
		{"cycle", []Step{s("a", "c"), s("b", "a"), s("c", "b"), s("d")}, "dependency cycle a → b → c → a"},
		{"self", []Step{s("a", "a")}, "dependency cycle a → a"},
		{"unknown dependency", []Step{s("a", "zz")}, `step "a" depends on unknown step "zz"`},
		{"unknown tool", []Step{{ID: "a", Tool: "nope"}}, `step "a": unknown tool "nope"`},
		{"duplicate id", []Step{s("a"), s("a")}, `step id "a" is used twice`},
		{"bad id", []Step{s("a b")}, `id "a b" must match`},
		{"reference without dependency", []Step{s("a"), {ID: "b", Tool: "wx__current", Arguments: map[string]any{"x": "{{steps.a.text}}"}}}, `references {{steps.a.text}} but does not depend on step "a"`},
		{"bad on_failure", []Step{{ID: "a", Tool: "wx__current", OnFailure: "panic"}}, `on_failure "panic"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Plan{Steps: tt.steps}).Validate("t", h.Lookup)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDAGParallelAndReferences(t *testing.T) {
	b := newBarrier(3)
	h := newTestHub(t, map[string]tool{
		"wx/current":  b.tool,
		"maps/route":  b.tool,
		"places/list": b.tool,
		"x/temp":      answer(map[string]any{"temp_c": 21.5, "list": []any{map[string]any{"name": "Chez X"}}}),
		"x/echo":      echo,
	}, nil)
	plan := &Plan{ID: "p1", Steps: []Step{
		{ID: "a", Tool: "wx__current", Arguments: map[string]any{"city": "Paris"}},
		{ID: "b", Tool: "maps__route"},
		{ID: "c", Tool: "places__list"},
		{ID: "t", Tool: "x__temp"},
		{ID: "use", Tool: "x__echo", DependsOn: []string{"a", "t"}, Arguments: map[string]any{
			"temp": "{{steps.t.structured.temp_c}}",
			"line": "It is {{ steps.t.structured.temp_c }}°C in {{steps.a.structured.city}}, eat at {{steps.t.structured.list.0.name}}",
			"deep": []any{map[string]any{"missing": "{{steps.t.structured.nope.x}}"}},
		}},
		{ID: "all", Tool: IntegrateTool, DependsOn: []string{"a", "b", "c", "use"}},
	}}
	res, err := (&Executor{Gateway: h}).Run(t.Context(), "t", plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Status != StatusOK {
			t.Errorf("step %s: %s %+v", r.ID, r.Status, r.Error)
		}
	}
	want := map[string]any{"temp": 21.5, "line": "It is 21.5°C in Paris, eat at Chez X", "deep": []any{map[string]any{"missing": nil}}}
	if diff := cmp.Diff(want, res[4].Structured); diff != "" {
		t.Errorf("resolved arguments (-want +got)\n%s", diff)
	}
	merged := res[5].Structured.(map[string]any)
	if len(merged) != 4 || merged["use"] == nil || !strings.Contains(res[5].Text, "a: echo") {
		t.Errorf("integrate: %v / %q", merged, res[5].Text)
	}
	for _, c := range h.Calls() {
		if c.PlanID != "p1" {
			t.Errorf("call %s has PlanID %q", c.Name, c.PlanID)
		}
	}
}

func TestDAGDegradeAndStop(t *testing.T) {
	for _, mode := range []string{Degrade, Stop} {
		t.Run(mode, func(t *testing.T) {
			var slowStarted = make(chan struct{})
			h := newTestHub(t, map[string]tool{
				"x/fail": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
					<-slowStarted // fail only once the slow step is in flight
					return nil, &hub.Error{Code: hub.CodeForbidden, Message: "vendor says no"}
				},
				"x/slow": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
					close(slowStarted)
					return hang(ctx, c)
				},
				"x/echo": echo,
			}, nil)
			// In degrade mode the slow step must end on its own: give it a timeout.
			plan := &Plan{Steps: []Step{
				{ID: "bad", Tool: "x__fail", OnFailure: mode, Retries: 3},
				{ID: "slow", Tool: "x__slow", Timeout: Duration(50 * time.Millisecond)},
				{ID: "after", Tool: "x__echo", DependsOn: []string{"bad"}, Arguments: map[string]any{"got": "{{steps.bad.structured}}", "status": "{{steps.bad.status}}"}},
			}}
			var failed []string
			res, err := (&Executor{Gateway: h}).Run(t.Context(), "t", plan, func(e Event) {
				if e.Type == EventStepFailed {
					failed = append(failed, e.Step+" "+e.Error.Code)
				}
			})
			status := func() []string {
				var s []string
				for _, r := range res {
					s = append(s, r.ID+" "+r.Status)
				}
				return s
			}
			if mode == Degrade {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]string{"bad failed", "slow failed", "after ok"}, status()); diff != "" {
					t.Errorf("(-want +got)\n%s", diff)
				}
				if diff := cmp.Diff(map[string]any{"got": nil, "status": "failed"}, res[2].Structured); diff != "" {
					t.Errorf("dependent got (-want +got)\n%s", diff)
				}
				if res[0].Attempts != 1 {
					t.Errorf("forbidden retried: %d attempts", res[0].Attempts)
				}
				return
			}
			if !errors.Is(err, ErrPlanStopped) || !strings.Contains(err.Error(), `step "bad" (x__fail) failed: vendor says no`) {
				t.Fatalf("error %v, want the plan stopped by bad", err)
			}
			if diff := cmp.Diff([]string{"bad failed", "slow canceled", "after canceled"}, status()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if n := len(h.Calls()); n != 2 {
				t.Errorf("%d calls, want 2 (after never runs)", n)
			}
		})
	}
}

func TestDAGRetries(t *testing.T) {
	var n atomic.Int32
	h := newTestHub(t, map[string]tool{"x/flaky": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		if n.Add(1) < 3 {
			return nil, &hub.Error{Code: hub.CodeUnavailable, Message: "down"}
		}
		return echo(ctx, c)
	}}, nil)
	res, err := (&Executor{Gateway: h, Backoff: time.Microsecond}).Run(t.Context(), "t", &Plan{Steps: []Step{{ID: "a", Tool: "x__flaky", Retries: 2}}}, nil)
	if err != nil || res[0].Status != StatusOK || res[0].Attempts != 3 {
		t.Errorf("err %v, result %+v", err, res[0])
	}
}

func TestDAGDeadlinePropagation(t *testing.T) {
	deadlines := make(chan time.Time, 4)
	h := newTestHub(t, map[string]tool{
		"x/look": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			d, _ := ctx.Deadline()
			deadlines <- d
			return echo(ctx, c)
		},
		"x/hang": hang,
	}, &hub.Options{DefaultTimeout: time.Hour})
	planDeadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(t.Context(), planDeadline)
	defer cancel()
	_, err := (&Executor{Gateway: h}).Run(ctx, "t", &Plan{Steps: []Step{
		{ID: "plain", Tool: "x__look"},
		{ID: "short", Tool: "x__look", Timeout: Duration(time.Minute)},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := []time.Time{<-deadlines, <-deadlines}
	if got[0].After(planDeadline) || got[1].After(planDeadline) {
		t.Errorf("deadlines %v after the plan's %v", got, planDeadline)
	}
	if !got[0].Before(planDeadline.Add(-30*time.Minute)) && !got[1].Before(planDeadline.Add(-30*time.Minute)) {
		t.Errorf("the step timeout did not shorten the deadline: %v", got)
	}

	// A plan whose deadline passes: the hanging step ends with it, the
	// dependent never starts, and Run says why.
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	res, err := (&Executor{Gateway: h}).Run(ctx, "t", &Plan{Steps: []Step{
		{ID: "h", Tool: "x__hang"},
		{ID: "next", Tool: "x__look", DependsOn: []string{"h"}},
	}}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want deadline exceeded", err)
	}
	if res[0].Error == nil || res[0].Error.Code != "timeout" || res[1].Status != StatusCanceled {
		t.Errorf("results %+v", res)
	}
}
