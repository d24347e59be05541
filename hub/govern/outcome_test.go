package govern_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/hub/retry"
)

// TestOutcomeOneVocabulary: a call whose tool reports an error (isError)
// is one outcome everywhere. Before hub.Outcome, the decision log and
// toolhub_calls_total said "ok" (or "fallback") for it while billing said
// "error" and charged nothing: the same call, two stories.
func TestOutcomeOneVocabulary(t *testing.T) {
	toolErr := func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		return &hub.Result{IsError: true}, nil
	}
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": toolErr}, nil)
	c := hub.Call{Tenant: "acme", Arguments: map[string]any{"city": "Oslo"}}
	r, err := e.call(t, "weather-a__book", c)
	if err != nil {
		t.Fatal(err)
	}
	var line struct {
		Outcome  string        `json:"outcome"`
		Attempts []hub.Attempt `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(e.log.String())), &line); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	e.gov.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	metricsSay := `toolhub_calls_total{outcome="tool_error",tool="weather-a__book",vendor="weather-a"} 1`

	billed := billing.CallFacts(&c, r, nil).Outcome
	if billed != billing.OutcomeError {
		t.Errorf("billing says %q, want error (not charged)", billed)
	}
	if line.Outcome != "tool_error" {
		t.Errorf("decision log says %q for a call billing records as %q; want tool_error", line.Outcome, billed)
	}
	if !strings.Contains(rec.Body.String(), metricsSay) {
		t.Errorf("metrics lack %s:\n%s", metricsSay, rec.Body.String())
	}
	if len(line.Attempts) != 1 || line.Attempts[0].Outcome != "tool_error" {
		t.Errorf("attempts %+v, want one tool_error", line.Attempts)
	}
}

// TestHubStateIsNotTheVendorsFailure (issue 36, item 2): an error of the
// hub's own making (hub.Error.HubState: a connection being made or
// drained) never counts in the vendor's breaker, however many there are.
func TestHubStateIsNotTheVendorsFailure(t *testing.T) {
	connecting := func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		return nil, &hub.Error{Code: hub.CodeUnavailable, Vendor: "weather-a", HubState: true, Message: `vendor "weather-a" is connecting`}
	}
	e := setup(t, map[string]hub.InvokerFunc{"weather-a": connecting}, &govern.Options{Retry: retry.Policy{Max: -1}})
	for i := range 20 {
		if _, err := e.call(t, "weather-a__current", hub.Call{}); err == nil || err.Code != hub.CodeUnavailable {
			t.Fatalf("call %d: err = %v, want unavailable", i, err)
		}
	}
	if st := e.gov.Status("weather-a").Breaker; st.State != "closed" || st.Failures != 0 || st.ConsecutiveFailures != 0 {
		t.Errorf("breaker %+v after 20 'connecting' answers; want closed, no failure", st)
	}
}
