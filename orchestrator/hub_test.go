package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// tool is an in-process vendor tool behind a real hub.Gateway.
type tool func(ctx context.Context, c *hub.Call) (*hub.Result, error)

// testHub is a real gateway over in-process tools, recording every call.
type testHub struct {
	*hub.Gateway
	mu    sync.Mutex
	tools map[string]tool // "vendor/tool"
	calls []hub.Call
}

const objSchema = `{"type":"object"}`

// newTestHub registers tools (keys "vendor/tool", with a description after
// a '|' if wanted) and returns a gateway over them.
func newTestHub(t testing.TB, tools map[string]tool, opts *hub.Options) *testHub {
	t.Helper()
	h := &testHub{tools: map[string]tool{}}
	cat := registry.NewCatalog()
	byVendor := map[string][]registry.ToolDef{}
	for key, fn := range tools {
		key, desc, _ := strings.Cut(key, "|")
		vendor, name, _ := strings.Cut(key, "/")
		byVendor[vendor] = append(byVendor[vendor], registry.ToolDef{Name: name, Description: desc, InputSchema: json.RawMessage(objSchema)})
		h.tools[key] = fn
	}
	for v, defs := range byVendor {
		if errs := cat.SetVendorTools(v, defs); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	ups := hub.UpstreamsFunc(func(vendor string) (hub.Invoker, bool) {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			h.mu.Lock()
			h.calls = append(h.calls, hub.Call{Tenant: c.Tenant, Name: c.Name, Arguments: c.Arguments, PlanID: c.PlanID})
			fn := h.tools[vendor+"/"+c.Tool.Def.Name]
			h.mu.Unlock()
			return fn(ctx, c)
		}), true
	})
	h.Gateway = hub.NewGateway(cat, ups, opts)
	return h
}

func (h *testHub) Calls() []hub.Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hub.Call(nil), h.calls...)
}

// answer returns a tool answering structured content.
func answer(v map[string]any) tool {
	return func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		return &hub.Result{Structured: v, Content: []mcp.Content{mcp.NewTextContent(fmt.Sprint(v))}}, nil
	}
}

// echo answers its arguments.
func echo(ctx context.Context, c *hub.Call) (*hub.Result, error) {
	return &hub.Result{Structured: c.Arguments, Content: []mcp.Content{mcp.NewTextContent("echo")}}, nil
}

// barrier lets n calls through only together: a call waits until n calls
// have arrived, so a test that passes proves they overlapped. Serial
// callers would fail with the call's timeout, not hang.
type barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) tool(ctx context.Context, c *hub.Call) (*hub.Result, error) {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return echo(ctx, c)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// hang waits for its context.
func hang(ctx context.Context, c *hub.Call) (*hub.Result, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
