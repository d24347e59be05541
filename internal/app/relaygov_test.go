package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// docsVendor is an in-process MCP vendor over streamable HTTP with one
// tool, one resource (mem://doc; mem://broken fails) and one prompt. reads
// counts the resources/read it answered or failed.
func docsVendor(t *testing.T, reads *atomic.Int64) string {
	t.Helper()
	srv := server.NewMCPServer("docs", "1.0.0", server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false))
	srv.AddTool(mcp.NewTool("ping"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("pong"), nil
	})
	read := func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		reads.Add(1)
		if req.Params.URI == "mem://broken" {
			return nil, errors.New("disk on fire")
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "the doc"}}, nil
	}
	srv.AddResource(mcp.NewResource("mem://doc", "doc"), read)
	srv.AddResource(mcp.NewResource("mem://broken", "broken"), read)
	srv.AddPrompt(mcp.NewPrompt("greet"), func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greet", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello"))}), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// mcpClient connects an MCP client to one of the hub's endpoints.
func mcpClient(t *testing.T, url string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return c
}

func readDoc(c *client.Client, uri string) error {
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	_, err := c.ReadResource(context.Background(), req)
	return err
}

// Issue 14: resources/read and prompts/get are relayed with the governance
// of a tool call: the tenant's budget stops them, the vendor's open breaker
// stops them, and they appear in the usage report.
func TestRelayedReadsAreGoverned(t *testing.T) {
	var docsReads, flakyReads atomic.Int64
	docs, flaky := docsVendor(t, &docsReads), docsVendor(t, &flakyReads)
	cfg := fmt.Sprintf(`data: %s
outbound: {allow: [127.0.0.0/8]}
vendors:
  - {id: docs, mcp: {transport: http, url: %s}, probe: {disabled: true}}
  - {id: flaky, mcp: {transport: http, url: %s}, probe: {disabled: true}}
governance: {retry: {max: 0}, breaker: {consecutive_failures: 1, min_calls: 1, cool_down: 1h, max_cool_down: 1h}}
billing:
  prices:
    - version: "t1"
      effective: 2020-01-01T00:00:00Z
      entries:
        - {vendor: docs, tool: "*", tenant: {per_call: "0.001"}, payout: {per_call: "0.0005"}}
  budgets:
    - {tenant: default, vendor: docs, period: day, limit: "0.002"}
`, t.TempDir(), docs, flaky)
	ctx := t.Context()
	a, err := New(ctx, parse(t, cfg), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	waitTools(t, a, "docs", true)
	waitTools(t, a, "flaky", true)
	ts := httptest.NewServer(a.API)
	defer ts.Close()

	// Budget: 0.002 a day on docs at 0.001 a request: a read and a prompt
	// spend it; the next read is refused and never reaches the vendor.
	c := mcpClient(t, ts.URL+"/mcp/vendors/docs")
	if err := readDoc(c, "mem://doc"); err != nil {
		t.Fatalf("first read: %v", err)
	}
	preq := mcp.GetPromptRequest{}
	preq.Params.Name = "greet"
	if _, err := c.GetPrompt(ctx, preq); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	before := docsReads.Load()
	if err := readDoc(c, "mem://doc"); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a read past the tenant's budget on docs: err = %v, want budget_exceeded", err)
	}
	if got := docsReads.Load() - before; got != 0 {
		t.Errorf("the vendor received %d reads past the budget", got)
	}

	// Breaker: one vendor fault opens flaky's circuit; the next read fails
	// fast and never reaches the vendor.
	f := mcpClient(t, ts.URL+"/mcp/vendors/flaky")
	if err := readDoc(f, "mem://broken"); err == nil {
		t.Fatal("a read the vendor fails succeeded")
	}
	if st := a.Gov.BreakerState("flaky"); st != "open" {
		t.Errorf("flaky's breaker after a failed read: %s, want open", st)
	}
	before = flakyReads.Load()
	if err := readDoc(f, "mem://doc"); err == nil || !strings.Contains(err.Error(), "circuit") {
		t.Errorf("a read with flaky's breaker open: err = %v, want circuit_open", err)
	}
	if got := flakyReads.Load() - before; got != 0 {
		t.Errorf("flaky received %d reads with its breaker open", got)
	}

	// Metering: the reads and the prompt are in the usage report, charged.
	if err := a.Meter.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(ts.URL + "/v1/reports/usage?group_by=vendor,tool&format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("usage report: %d %s", resp.StatusCode, body)
	}
	var rep struct {
		Rows []struct {
			Vendor, Tool string
			Calls        int64           `json:"calls"`
			Rejected     int64           `json:"rejected"`
			TenantCost   json.RawMessage `json:"tenant_cost"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("usage report: %v: %s", err, body)
	}
	got := map[string]string{}
	for _, r := range rep.Rows {
		got[r.Vendor+"/"+r.Tool] = fmt.Sprintf("%d calls, %d rejected, cost %s", r.Calls, r.Rejected, strings.Trim(string(r.TenantCost), `"`))
	}
	for k, want := range map[string]string{"docs/resources/read": "2 calls, 1 rejected, cost 0.001000", "docs/prompts/get": "1 calls, 0 rejected, cost 0.001000"} {
		if got[k] != want {
			t.Errorf("usage report %s: %q, want %q (report %s)", k, got[k], want, body)
		}
	}
}
