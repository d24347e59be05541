package orchestrator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
)

// boundsPlanner plans offline over a weather tool, a big one and one that
// waits for release.
func boundsPlanner(t *testing.T, cfg Config, release chan struct{}, started chan string) (*Planner, *testHub) {
	t.Helper()
	h := newTestHub(t, map[string]tool{
		"x/weather|current weather for a city": answer(map[string]any{"temp": 21}),
		"x/novel|write a long novel":           func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return bigResult(), nil },
		"x/wait|wait for the signal": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			started <- c.Tenant
			select {
			case <-release:
				return echo(ctx, c)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}, &hub.Options{DefaultTimeout: time.Hour})
	p, err := New(cfg, h, h.Catalog(), "")
	if err != nil {
		t.Fatal(err)
	}
	return p, h
}

func bigResult() *hub.Result {
	s := strings.Repeat("once upon a time <b> ", 250_000) // 5 MB
	return &hub.Result{Structured: map[string]any{"text": s}, Content: []mcp.Content{mcp.NewTextContent(s)}}
}

func hubCode(err error) hub.Code {
	var e *hub.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// TestGoalBounds (issue 32, item 2): a goal over max_goal_bytes or
// max_goal_clauses is refused before anything is planned or called, and the
// offline planner's answer for a goal of many clauses stays small.
func TestGoalBounds(t *testing.T) {
	p, h := boundsPlanner(t, Config{MaxGoalBytes: 1 << 20}, nil, nil)
	many := strings.Repeat("weather in Oslo, ", 10_000) // 170 kB, 10,000 clauses
	for _, tt := range []struct {
		name, goal string
		says       string
	}{
		{"bytes", strings.Repeat("weather in Oslo and ", 60_000), "planner.max_goal_bytes (1048576)"},
		{"clauses", many, "10000 things"},
		{"clauses, in Chinese", strings.Repeat("北京天气，", 17), "planner.max_goal_clauses (16)"},
	} {
		out, err := p.Run(t.Context(), "acme", Request{Goal: tt.goal}, nil)
		if out != nil || hubCode(err) != hub.CodeTooLarge || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v, %v; want too_large saying %q", tt.name, out, err, tt.says)
		}
	}
	if c := h.Calls(); len(c) != 0 {
		t.Errorf("calls %v", c)
	}
	// PlanOffline, which Run's bounds do not guard, reads no more clauses
	// either: one Unplanned says why, with the goal cut.
	plan, un := p.PlanOffline("acme", many)
	if len(plan.Steps) != 0 || len(un) != 1 || un[0].Reason != ReasonTooLarge || len(un[0].Clause) > 200 || !strings.Contains(un[0].Message, "planner.max_goal_clauses") {
		t.Errorf("PlanOffline of 10,000 clauses: %d steps, %+v", len(plan.Steps), un)
	}
	// At the bound it plans: 16 clauses, the same step once.
	out, err := p.Run(t.Context(), "acme", Request{Goal: strings.Repeat("weather in Oslo, ", 16)}, nil)
	if err != nil || out.Status != StatusOK || len(out.Steps) != 1 {
		t.Errorf("16 clauses: %v %+v", err, out)
	}
	// The defaults.
	q, _ := boundsPlanner(t, Config{}, nil, nil)
	if q.MaxGoalBytes != 8192 || q.MaxGoalClauses != 16 || q.MaxAnswerBytes != 1<<20 || q.MaxConcurrentPerTenant != 4 {
		t.Errorf("defaults %d %d %d %d", q.MaxGoalBytes, q.MaxGoalClauses, q.MaxAnswerBytes, q.MaxConcurrentPerTenant)
	}
}

// TestAnswerBounded: a step answering 5 MB makes an outcome of at most
// max_answer_bytes, marked truncated.
func TestAnswerBounded(t *testing.T) {
	p, _ := boundsPlanner(t, Config{MaxAnswerBytes: 64 << 10}, nil, nil)
	out, err := p.Run(t.Context(), "acme", Request{Goal: "write a long novel, and the weather in Oslo"}, nil)
	if err != nil || len(out.Steps) != 3 {
		t.Fatalf("%v %+v", err, out)
	}
	if n := jsonSize(out); n > 64<<10 || !out.Truncated || !strings.Contains(out.Note, "planner.max_answer_bytes") {
		t.Errorf("outcome %d bytes, truncated %v, note %q", n, out.Truncated, out.Note)
	}
	// The small step keeps its result.
	for _, s := range out.Steps {
		if s.Tool == "x__weather" && s.Structured == nil {
			t.Errorf("the weather step lost its result: %+v", s)
		}
	}
	// Under the bound nothing is cut.
	out, err = p.Run(t.Context(), "acme", Request{Goal: "weather in Oslo"}, nil)
	if err != nil || out.Truncated || out.Note != "" {
		t.Errorf("%v %+v", err, out)
	}
}

// TestConcurrentPerTenant: a tenant runs at most max_concurrent_per_tenant
// plans at once; one more is refused with rate_limited, other tenants are
// not held back, and the slots are given back.
func TestConcurrentPerTenant(t *testing.T) {
	release, started := make(chan struct{}), make(chan string, 4)
	p, _ := boundsPlanner(t, Config{MaxConcurrentPerTenant: 2}, release, started)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := p.Run(context.Background(), "acme", Request{Goal: "wait for the signal"}, nil)
			errs <- err
		}()
	}
	<-started
	<-started
	_, err := p.Run(t.Context(), "acme", Request{Goal: "weather in Oslo"}, nil)
	var e *hub.Error
	if !errors.As(err, &e) || e.Code != hub.CodeRateLimited || e.RetryAfter <= 0 || !strings.Contains(e.Message, "planner.max_concurrent_per_tenant") {
		t.Errorf("acme's third plan: %v", err)
	}
	if out, err := p.Run(t.Context(), "globex", Request{Goal: "weather in Oslo"}, nil); err != nil || out.Status != StatusOK {
		t.Errorf("globex's plan: %v %+v", err, out)
	}
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	p.runMu.Lock()
	left := len(p.running)
	p.runMu.Unlock()
	if left != 0 {
		t.Errorf("%d tenants still counted as running", left)
	}
	if _, err := p.Run(t.Context(), "acme", Request{Goal: "weather in Oslo"}, nil); err != nil {
		t.Errorf("acme after its plans ended: %v", err)
	}
}
