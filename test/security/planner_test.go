package security

// The planner attacked from outside a real `toolhub serve` (issue 32,
// item 2): one tenant request could take the hub's memory with a long goal
// (a 3.5 MB goal answered 81 MB; eight at once took 3 GB), and nothing
// bounded how many plans a tenant ran at once.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

// planBody is a /v1/plan body for goal.
func planBody(goal string) string {
	b, _ := json.Marshal(map[string]string{"goal": goal, "mode": "rules"})
	return string(b)
}

// planError reads the error of a /v1/plan answer.
func planError(body string) (code, msg string) {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &e)
	return e.Error.Code, e.Error.Message
}

func TestPlannerBounds(t *testing.T) {
	h, vs, g := tenantHubWith(t, "planner:\n  max_concurrent_per_tenant: 2\n")

	t.Run("goal over max_goal_bytes", func(t *testing.T) {
		goal := strings.Repeat("weather in Oslo and ", 100_000/20) // 100 kB, inside max_body_bytes
		st, body := h.req("acme", "POST", "/v1/plan", planBody(goal), nil)
		code, msg := planError(body)
		if st != 413 || code != "too_large" || !strings.Contains(msg, "planner.max_goal_bytes") {
			t.Errorf("a 100 kB goal: %d, %.300s; want 413 too_large naming planner.max_goal_bytes", st, body)
		}
		if len(body) > 4096 {
			t.Errorf("the refusal is %d bytes", len(body))
		}
		// The same over server-sent events: refused before the stream starts.
		st, body = h.req("acme", "POST", "/v1/plan", planBody(goal), map[string]string{"Accept": "text/event-stream"})
		if st != 413 || !strings.Contains(body, "planner.max_goal_bytes") {
			t.Errorf("a 100 kB goal, as SSE: %d, %.300s; want 413", st, body)
		}
	})

	t.Run("goal over max_goal_clauses", func(t *testing.T) {
		goal := strings.Repeat("weather in Oslo, ", 50) // 850 bytes, 50 clauses
		st, body := h.req("acme", "POST", "/v1/plan", planBody(goal), nil)
		code, msg := planError(body)
		if st != 413 || code != "too_large" || !strings.Contains(msg, "planner.max_goal_clauses") {
			t.Errorf("a goal of 50 clauses: %d, %.300s; want 413 too_large naming planner.max_goal_clauses", st, body)
		}
	})

	t.Run("plans per tenant at once", func(t *testing.T) {
		g.Close()
		defer g.Open()
		post := func(key, goal string, sse bool) (int, string, error) {
			r, _ := http.NewRequestWithContext(t.Context(), "POST", h.url+"/v1/plan", strings.NewReader(planBody(goal)))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer "+h.keys[key])
			if sse {
				r.Header.Set("Accept", "text/event-stream")
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				return 0, "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b), err
		}
		// Two of acme's plans held at weather-a: the most it may run.
		var wg sync.WaitGroup
		held := make([]string, 2)
		for i := range held {
			wg.Go(func() {
				st, body, err := post("acme", "weather in Oslo", false)
				held[i] = fmt.Sprintf("%d %v %.300s", st, err, body)
			})
		}
		drilltest.WaitFor(t, 30*time.Second, "two plans held at weather-a", func() bool { return vs[vendors.WeatherA].Counters().InFlight == 2 })
		for _, sse := range []bool{false, true} {
			st, body, err := post("acme", "weather in Oslo", sse)
			code, msg := planError(body)
			if err != nil || st != 429 || code != "rate_limited" || !strings.Contains(msg, "planner.max_concurrent_per_tenant") {
				t.Errorf("acme's third plan (sse %v): %d %v %.300s; want 429 rate_limited naming planner.max_concurrent_per_tenant", sse, st, err, body)
			}
		}
		// Another tenant is not held back by acme's plans.
		if st, body, err := post("globex", "route from Paris to Lyon", false); err != nil || st != 200 {
			t.Errorf("globex's plan while acme's run: %d %v %.300s", st, err, body)
		}
		g.Open()
		wg.Wait()
		for i, got := range held {
			if !strings.HasPrefix(got, "200 <nil>") {
				t.Errorf("held plan %d: %s", i, got)
			}
		}
		// The slots are free again.
		if st, body, err := post("acme", "weather in Oslo", false); err != nil || st != 200 {
			t.Errorf("acme's plan after the others ended: %d %v %.300s", st, err, body)
		}
	})
}
