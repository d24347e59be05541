package hub

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

// Peer is the MCP client a call is made for, as a vendor connection sees
// it: the session toolhub relays the vendor's notifications and
// server→client requests (sampling, elicitation, roots) to while the call
// runs. Front doors that have one put it in the call's context
// ([WithPeer]); a call without one (REST, A2A, jobs) gets the vendor's
// requests refused.
type Peer interface {
	// Declared reports whether the client declared the capability a
	// server→client request method needs (sampling/createMessage,
	// elicitation/create, roots/list).
	Declared(method string) bool
	CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
	// Notify sends a notification (progress, log message) to the client,
	// on the stream of the call when there is one. It must not block long.
	Notify(method string, params map[string]any) error
}

type peerKey struct{}

// WithPeer returns ctx with the MCP client calls made under it are for.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerFrom returns the MCP client a call is made for, or nil.
func PeerFrom(ctx context.Context) Peer {
	p, _ := ctx.Value(peerKey{}).(Peer)
	return p
}
