package fallback_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/fallback"
)

// userPeer is the MCP client of a call as the route sees it: it answers
// elicitation as a user would (the wire is covered by test/interop).
type userPeer struct {
	elicitation bool
	answer      *mcp.ElicitationResult
	asked       []mcp.ElicitationRequest
}

func (p *userPeer) Declared(method string) bool {
	return p.elicitation && method == string(mcp.MethodElicitationCreate)
}
func (p *userPeer) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, errors.New("no sampling here")
}
func (p *userPeer) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.asked = append(p.asked, req)
	return p.answer, nil
}
func (p *userPeer) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return nil, errors.New("no roots here")
}
func (p *userPeer) Notify(string, map[string]any) error { return nil }

// TestHighRiskAsksTheUser: a high-risk call while degraded asks the calling
// MCP user over elicitation when the client can be asked; confirmed, it
// runs on the chain; declined, it is refused; a client without elicitation
// gets today's review queue.
func TestHighRiskAsksTheUser(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	_ = f.router.Modes().Pin("weather.risky", fallback.Degraded)
	run := func(p *userPeer) (*hub.Result, error) {
		ctx := hub.WithPeer(context.Background(), p)
		return f.gw.Call(ctx, &hub.Call{Name: "weather.risky", Tenant: "acme", Arguments: map[string]any{"city": "Oslo"}})
	}

	yes := &userPeer{elicitation: true, answer: &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true}}}}
	r, err := run(yes)
	if err != nil || r.Provenance.Queued || r.Provenance.Vendor == "" {
		t.Fatalf("confirmed: %+v %v; want a vendor's answer", r, err)
	}
	if len(yes.asked) != 1 || !strings.Contains(yes.asked[0].Params.Message, "high-risk") {
		t.Errorf("asked %+v", yes.asked)
	}

	no := &userPeer{elicitation: true, answer: &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}}
	if _, err := run(no); hub.CodeOf(err) != hub.CodeForbidden || !errors.Is(err, fallback.ErrDeclined) {
		t.Errorf("declined: %v; want forbidden (declined)", err)
	}

	mute := &userPeer{}
	r, err = run(mute)
	if err != nil || !r.Provenance.Queued || len(f.jobs.parked) != 1 {
		t.Fatalf("a client without elicitation: %+v %v (parked %v); want the review queue", r, err, f.jobs.parked)
	}
	if len(mute.asked) != 0 {
		t.Error("a client without elicitation was asked")
	}
}
