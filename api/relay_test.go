package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/servers"
)

// idTap notes the ids of the requests the server sends the client.
type idTap struct {
	*transport.StreamableHTTP
	ids chan mcp.RequestId
}

func (t *idTap) SetRequestHandler(h transport.RequestHandler) {
	t.StreamableHTTP.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		if req.Method == string(mcp.MethodSamplingCreateMessage) {
			t.ids <- req.ID
		}
		return h(ctx, req)
	})
}

// samplingFunc is a client's sampling handler.
type samplingFunc func(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)

func (f samplingFunc) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return f(ctx, req)
}

// Issue 14: a vendor that cancels the sampling request it sent during a
// call (notifications/cancelled, which servers turns into the relay's
// context ending with ErrVendorCancelled) has the MCP client told: the
// client gets notifications/cancelled naming the request it was sent.
func TestVendorCancelledRequestReachesClient(t *testing.T) {
	cat := registry.NewCatalog()
	cat.SetVendorTools("asker", []registry.ToolDef{{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	asked := make(chan struct{})
	ups := upstreams{"asker": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		p := hub.PeerFrom(ctx)
		if p == nil {
			return nil, errors.New("no peer")
		}
		vctx, cancel := context.WithCancelCause(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := p.CreateMessage(vctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{MaxTokens: 5,
				Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}}}})
			done <- err
		}()
		<-asked
		cancel(fmt.Errorf("%w: the vendor gave up", servers.ErrVendorCancelled))
		<-done
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("gave up")}}, nil
	}}
	s := NewServer(hub.NewGateway(cat, ups, nil), &Options{MaxBodyBytes: 64 << 10})
	t.Cleanup(func() { s.Close() })
	ts := httptest.NewServer(s)
	defer ts.Close()

	//lint:ignore SA1019 the test is about the legacy standalone GET stream, which clients before 2026-07-28 still open
	tr, err := transport.NewStreamableHTTP(ts.URL+"/mcp/vendors/asker", transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	tap := &idTap{StreamableHTTP: tr, ids: make(chan mcp.RequestId, 1)}
	cancelled := make(chan map[string]any, 2)
	listChanged := make(chan struct{}, 32)
	c := client.NewClient(tap, client.WithProtocolVersion("2025-11-25"),
		client.WithSamplingHandler(samplingFunc(func(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			close(asked)
			<-ctx.Done()
			return nil, ctx.Err()
		})))
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case string(mcp.MethodNotificationCancelled):
			cancelled <- n.Params.AdditionalFields
		case string(mcp.MethodNotificationToolsListChanged):
			listChanged <- struct{}{}
		}
	})
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "ask"
	calls := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, req)
		calls <- err
	}()
	id := <-tap.ids
	if err := <-calls; err != nil {
		t.Fatalf("the call: %v", err)
	}
	// mcp-go puts a session's notifications on the call's stream or on
	// the standalone one: list changes made now come after the
	// cancellation on either.
	var got map[string]any
	for i := 0; got == nil; i++ {
		if i == 10 {
			t.Fatal("the client was not told the vendor cancelled the sampling request it was sent")
		}
		cat.SetVendorTools("asker", []registry.ToolDef{{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: fmt.Sprint("more", i), InputSchema: json.RawMessage(`{"type":"object"}`)}})
		<-listChanged
		select {
		case got = <-cancelled:
		default:
		}
	}
	want, _ := json.Marshal(id)
	if b, _ := json.Marshal(got["requestId"]); string(b) != string(want) {
		t.Errorf("notifications/cancelled names request %s, want %s (the sampling request the client got)", b, want)
	}
	if r, _ := got["reason"].(string); r == "" {
		t.Errorf("notifications/cancelled without the vendor's reason: %v", got)
	}
}
