package servers

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// benchServer is an in-process mcp-go server over streamable HTTP.
func benchServer(b *testing.B) *httptest.Server {
	b.Helper()
	ts := httptest.NewServer(server.NewStreamableHTTPServer(newMCPServer()))
	b.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts
}

// BenchmarkInvokeHTTP is one small tool call through the manager's invoker.
func BenchmarkInvokeHTTP(b *testing.B) {
	ts := benchServer(b)
	cat := registry.NewCatalog()
	m := NewManager(cat, &Options{Logger: slog.New(slog.DiscardHandler), HealthInterval: -1})
	b.Cleanup(func() { m.Close() })
	if err := m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, ts.URL+"/mcp")); err != nil {
		b.Fatal(err)
	}
	// Connecting takes a few milliseconds; it is set-up, not timed.
	deadline := time.Now().Add(10 * time.Second)
	for st := m.Status("hv"); st.State != StateReady; st = m.Status("hv") {
		if time.Now().After(deadline) {
			b.Fatalf("vendor not ready: %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
	tool, _ := cat.VendorTool("hv", "echo")
	inv, _ := m.Upstream("hv")
	ctx := context.Background()
	args := map[string]any{"text": "hello"}
	b.ReportAllocs()
	for b.Loop() {
		r, err := inv.Invoke(ctx, &hub.Call{Tool: tool, Arguments: args})
		if err != nil || r.IsError {
			b.Fatal(err)
		}
	}
}

// BenchmarkDirectHTTP is the same call with a plain mcp-go client.
func BenchmarkDirectHTTP(b *testing.B) {
	ts := benchServer(b)
	c, err := client.NewStreamableHttpClient(ts.URL + "/mcp")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		b.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": "hello"}
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.CallTool(ctx, req)
		if err != nil || r.IsError {
			b.Fatal(err)
		}
	}
}
