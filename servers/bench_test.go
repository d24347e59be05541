package servers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
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

// BenchmarkInvokeHTTP is one small tool call through the manager's invoker
// (the fast path, on DefaultProtocolVersion).
func BenchmarkInvokeHTTP(b *testing.B) { benchInvokeHTTP(b, benchServer(b).URL+"/mcp", &Options{}) }

// BenchmarkInvokeHTTPNoFastPath is the same call through mcp-go's client.
func BenchmarkInvokeHTTPNoFastPath(b *testing.B) {
	benchInvokeHTTP(b, benchServer(b).URL+"/mcp", &Options{NoFastPath: true})
}

// benchInvokeHTTP calls the echo tool of the vendor at url through a
// manager with o, as fast as it answers.
func benchInvokeHTTP(b *testing.B, url string, o *Options) {
	cat := registry.NewCatalog()
	o.Logger, o.HealthInterval = slog.New(slog.DiscardHandler), -1
	m := NewManager(cat, o)
	b.Cleanup(func() { m.Close() })
	if err := m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, url)); err != nil {
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

// BenchmarkDirectHTTP is the same call with a plain mcp-go client, on the
// revision it prefers (2026-07-28).
func BenchmarkDirectHTTP(b *testing.B) { benchDirectHTTP(b, "") }

// BenchmarkDirectHTTP20251125 is the same call with a plain mcp-go client
// on toolhub's upstream revision.
func BenchmarkDirectHTTP20251125(b *testing.B) { benchDirectHTTP(b, mcp.ProtocolVersion20251125) }

func benchDirectHTTP(b *testing.B, protocol string) {
	ts := benchServer(b)
	c, err := client.NewStreamableHttpClient(ts.URL + "/mcp")
	if err != nil {
		b.Fatal(err)
	}
	if protocol != "" {
		c = client.NewClient(c.GetTransport(), client.WithProtocolVersion(protocol))
	}
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	init.Params.ProtocolVersion = protocol
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

// BenchmarkHopHTTP is the hop alone: the vendor answers tools/call with
// a canned result, so what is measured is toolhub's client side (request,
// response, decoding), on the fast path and through mcp-go's client.
func BenchmarkHopHTTP(b *testing.B) {
	for _, fast := range []bool{true, false} {
		name := "fast"
		if !fast {
			name = "mcp-go"
		}
		b.Run(name, func(b *testing.B) {
			wv := newWireVendor(b, newMCPServer())
			wv.fault = func(w http.ResponseWriter, id json.RawMessage) bool {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"}}}`, id)
				return true
			}
			wv.calls = nil
			benchInvokeHTTP(b, wv.ts.URL, &Options{NoFastPath: !fast})
		})
	}
}
