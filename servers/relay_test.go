package servers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
)

// testPeer is an MCP client of the front door as a vendor connection sees
// it: it answers sampling with "from <name>" and elicitation with its name,
// and notes what it was asked.
type testPeer struct {
	name string

	mu       sync.Mutex
	asked    []string
	notified []mcp.JSONRPCNotification
	// block, when set, makes CreateMessage wait for its context to end and
	// close started first.
	block   bool
	started chan struct{}
	ended   chan error
}

var _ hub.Peer = (*testPeer)(nil)

func (p *testPeer) note(m string) {
	p.mu.Lock()
	p.asked = append(p.asked, m)
	p.mu.Unlock()
}

func (p *testPeer) askedOf() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

func (p *testPeer) Declared(string) bool { return true }

func (p *testPeer) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	p.note("sampling")
	if p.block {
		close(p.started)
		<-ctx.Done()
		p.ended <- context.Cause(ctx)
		return nil, ctx.Err()
	}
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("from " + p.name)}, Model: "test"}, nil
}

func (p *testPeer) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.note("elicitation")
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": p.name}}}, nil
}

func (p *testPeer) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	p.note("roots")
	return nil, errors.New("no roots")
}

func (p *testPeer) Notify(method string, params map[string]any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION}
	n.Method = method
	n.Params.AdditionalFields = params
	p.notified = append(p.notified, n)
	return nil
}

// relayOpts speak a revision before 2026-07-28 to vendors: from that
// revision on a vendor asks for input in its result (SEP-2322), not with
// server→client requests.
var relayOpts = &Options{ProtocolVersion: "2025-11-25"}

// holdCall starts a call of peer's that stays in flight at the vendor (the
// test vendor's slow tool) until the test ends, and waits until the
// connection counts it.
func holdCall(t *testing.T, h *harness, vendor string, peer hub.Peer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if peer != nil {
		ctx = hub.WithPeer(ctx, peer)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = h.call(ctx, vendor, "slow", map[string]any{"ms": float64(time.Hour.Milliseconds())})
	}()
	t.Cleanup(func() { cancel(); <-done })
	c, err := h.m.conn(vendor)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the held call in flight", func() bool { return c.gate.count() == 1 })
}

// Issue 14: over stdio nothing on the wire says which call a vendor's
// server→client request belongs to. With an MCP client's call in flight,
// a sampling request made during another caller's call (REST: no MCP
// client) went to the MCP client in flight: the wrong caller answered.
func TestStdioServerRequestIsNotSentToAnotherCaller(t *testing.T) {
	h := newHarness(t, relayOpts)
	if err := h.m.Add(context.Background(), stdioVendor("tv", "-relay")); err != nil {
		t.Fatal(err)
	}
	h.waitReady("tv")
	alice := &testPeer{name: "alice"}
	holdCall(t, h, "tv", alice)

	r, err := h.call(ctxTimeout(t, 20*time.Second), "tv", "sample", map[string]any{"prompt": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(r); !r.IsError || !strings.Contains(got, "not tied to one call") {
		t.Errorf("sampling during a REST call with an MCP client's call in flight: %q (isError %v), want refused as not tied to one call", got, r.IsError)
	}
	if got := alice.askedOf(); len(got) != 0 {
		t.Errorf("the MCP client of another call was asked %v", got)
	}
}

// With one call in flight, its MCP client gets the request; with several,
// a request naming the call's progress token (the token toolhub gave the
// vendor for that call) goes to that call's client, and one naming none is
// refused.
func TestStdioServerRequestRouting(t *testing.T) {
	h := newHarness(t, relayOpts)
	if err := h.m.Add(context.Background(), stdioVendor("tv", "-relay")); err != nil {
		t.Fatal(err)
	}
	h.waitReady("tv")
	bob := &testPeer{name: "bob"}
	ctx := hub.WithPeer(ctxTimeout(t, 20*time.Second), bob)
	if r, err := h.call(ctx, "tv", "sample", nil); err != nil || text(r) != "from bob" {
		t.Fatalf("sampling of the one call in flight: %v, %v", r, err)
	}

	// A REST call alone: refused, clearly.
	if r, err := h.call(ctxTimeout(t, 20*time.Second), "tv", "sample", nil); err != nil || !r.IsError || !strings.Contains(text(r), "not from an MCP client") {
		t.Errorf("sampling during a REST call: %v, %v", r, err)
	}

	alice := &testPeer{name: "alice"}
	holdCall(t, h, "tv", alice)
	inv, _ := h.m.Upstream("tv")
	tool, _ := h.cat.VendorTool("tv", "elicit")
	call := func(meta map[string]any) string {
		r, err := inv.Invoke(ctx, &hub.Call{Tool: tool, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		return text(r)
	}
	if got := call(map[string]any{"progressToken": "bob-1"}); got != "bob" {
		t.Errorf("elicitation naming the call's progress token: %q, want bob's answer", got)
	}
	if got := call(nil); !strings.Contains(got, "not tied to one call") {
		t.Errorf("elicitation naming no call with two calls in flight: %q, want refused", got)
	}
	if got := alice.askedOf(); len(got) != 0 {
		t.Errorf("alice, whose call asked nothing, was asked %v", got)
	}
}

// Issue 14: a vendor that gives up on its own server→client request sends
// notifications/cancelled for it; the relay to the MCP client ends with
// ErrVendorCancelled (the front door tells its client), and the vendor's
// call goes on.
func TestStdioVendorCancelsItsRequest(t *testing.T) {
	h := newHarness(t, relayOpts)
	if err := h.m.Add(context.Background(), stdioVendor("tv", "-relay")); err != nil {
		t.Fatal(err)
	}
	h.waitReady("tv")
	alice := &testPeer{name: "alice", block: true, started: make(chan struct{}), ended: make(chan error, 1)}
	type answer struct {
		r   *hub.Result
		err error
	}
	held := make(chan answer, 1)
	go func() {
		r, err := h.call(hub.WithPeer(ctxTimeout(t, 20*time.Second), alice), "tv", "sample", nil)
		held <- answer{r, err}
	}()
	<-alice.started // the vendor's sampling request reached alice

	// A second call (REST) makes the vendor cancel the first one's request.
	r, err := h.call(ctxTimeout(t, 20*time.Second), "tv", "give-up", nil)
	if err != nil || r.IsError {
		t.Fatalf("give-up: %v, %v", r, err)
	}
	if err := <-alice.ended; !errors.Is(err, ErrVendorCancelled) || !strings.Contains(err.Error(), "the vendor gave up") {
		t.Errorf("alice's sampling ended with %v, want ErrVendorCancelled with the vendor's reason", err)
	}
	a := <-held
	if a.err != nil || !a.r.IsError || !strings.Contains(text(a.r), "sampling") {
		t.Errorf("the call whose sampling the vendor cancelled: %v, %v", a.r, a.err)
	}
}
