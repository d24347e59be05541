package a2a

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// rejectAgent rejects every task it is given, saying why.
type rejectAgent struct{}

func (rejectAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		if !yield(sdk.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateRejected, sdk.NewMessage(sdk.MessageRoleAgent, sdk.NewTextPart("policy: no drawings of people"))), nil)
	}
}

func (rejectAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {}
}

// TestRejectedTaskIsFinal (issue 28, leftovers): an agent that rejects a
// task has given its definitive answer: a final tool error (a capability
// answers with it instead of trying its next vendor, a job fails at once),
// not an upstream error that is retried.
func TestRejectedTaskIsFinal(t *testing.T) {
	var calls atomic.Int32
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(rejectAgent{}))
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == WellKnownCardPath {
			card := &sdk.AgentCard{Name: "Rejecter", Description: "rejects", Version: "1",
				SupportedInterfaces: []*sdk.AgentInterface{sdk.NewAgentInterface(ts.URL+"/a2a", sdk.TransportProtocolJSONRPC)},
				DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
				Skills: []sdk.AgentSkill{{ID: "draw", Name: "draw", Description: "Draws.", Tags: []string{"test"}}}}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(card)
			return
		}
		calls.Add(1)
		rpc.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	cat := registry.NewCatalog()
	m := NewManager(cat, &Options{Logger: quietLogger(), RefreshInterval: -1})
	t.Cleanup(func() { m.Close() })
	addReady(t, m, registry.Vendor{ID: "rej", A2A: &registry.A2ASpec{Card: ts.URL}})
	gw := hub.NewGateway(cat, m, &hub.Options{DefaultTimeout: 20 * time.Second, Logger: quietLogger()})
	res, err := gw.Call(t.Context(), &hub.Call{Tenant: "default", Name: "rej__draw", Arguments: map[string]any{"text": "a person"}})
	if err != nil {
		t.Fatalf("a rejected task answered an error, want a final tool error: %v", err)
	}
	if !res.IsError || !res.Final || !strings.Contains(hub.TextOf(res), "policy: no drawings of people") {
		t.Errorf("result: isError %v, final %v, %q", res.IsError, res.Final, hub.TextOf(res))
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the agent got %d calls, want 1 (a rejection is not retried)", n)
	}
}
