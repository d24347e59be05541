package fallback

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
)

// ErrDeclined is the error of a high-risk call the calling user declined.
var ErrDeclined = errors.New("fallback: the user declined the call")

// askUser hands a call that needs review to the calling user, over MCP
// elicitation, when the call comes from an MCP client that declared the
// capability: it reports whether the user confirmed it. A call from
// anywhere else (REST, A2A, a client without elicitation) is not asked
// (false, nil) and goes to the review queue as before. A user who declines
// or cancels ends the call with ErrDeclined.
func askUser(ctx context.Context, c *hub.Call, reason string) (bool, error) {
	p := hub.PeerFrom(ctx)
	if p == nil || !p.Declared(string(mcp.MethodElicitationCreate)) {
		return false, nil
	}
	req := mcp.ElicitationRequest{Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)}}
	req.Params.Message = fmt.Sprintf("%s. Run %s anyway on the remaining vendors (%s)?", reason, c.Capability.Name, chainText(c))
	req.Params.RequestedSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"confirm": map[string]any{"type": "boolean", "title": "Run it", "description": "true runs the call now; false leaves it for an operator's review"},
		},
		"required": []string{"confirm"},
	}
	res, err := p.Elicit(ctx, req)
	if err != nil {
		return false, err
	}
	if res.Action != mcp.ElicitationResponseActionAccept {
		c.Trace.Decide("high-risk: the user " + string(res.Action) + "ed over MCP elicitation")
		return false, &hub.Error{Code: hub.CodeForbidden, Message: fmt.Sprintf("%s; the user %sed running it", reason, res.Action), Err: ErrDeclined}
	}
	m, _ := res.Content.(map[string]any)
	if ok, _ := m["confirm"].(bool); !ok {
		c.Trace.Decide("high-risk: the user did not confirm over MCP elicitation")
		return false, &hub.Error{Code: hub.CodeForbidden, Message: reason + "; the user did not confirm running it", Err: ErrDeclined}
	}
	c.Trace.Decide("high-risk: the user confirmed over MCP elicitation")
	return true, nil
}

func chainText(c *hub.Call) string {
	s := ""
	for i, st := range c.Capability.Chain {
		if i > 0 {
			s += ", "
		}
		s += st.Tool
	}
	return s
}
