package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
	"github.com/toolhub/toolhub/registry/mcpregistry"
)

// TestRegistryAPI runs the MCP Registry API against `toolhub serve` with
// auth on: a vendor key publishes a server.json (a bad one is refused with
// the place that is wrong), each tenant lists only the vendors it may
// call, and an entry's remote is an MCP endpoint that serves the vendor's
// tools.
func TestRegistryAPI(t *testing.T) {
	addr, _ := serveVendors(t, vendors.WeatherA, vendors.Maps)
	data := t.TempDir()
	key := func(args ...string) string {
		out, errOut, code := th(t, nil, append([]string{"keys", "create", "--data", data}, args...)...)
		if code != 0 {
			t.Fatalf("keys create: %d %s", code, errOut)
		}
		for _, f := range strings.Fields(out) {
			if strings.HasPrefix(f, "thk_") {
				return f
			}
		}
		t.Fatalf("no token in %q", out)
		return ""
	}
	vendorKey, acme, all := key("--role", "vendor", "--vendor", "routes"), key("--role", "tenant", "--tenant", "acme"), key("--role", "tenant", "--tenant", "all")
	h := startHub(t, `
addr: 127.0.0.1:0
auth: {enabled: true}
outbound: {allow: ["`+addr+`"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: http://`+addr+`/weather-a/mcp}
tenants:
  - {id: acme, tools: ["weather-a__*"]}
  - {id: all}
`, data)
	do := func(tok, method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, h.URL()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	doc := `{"$schema":"` + mcpregistry.SchemaURL + `","name":"io.github.example/routes","title":"Routes",
	 "description":"Driving and walking routes","version":"1.0.0",
	 "remotes":[{"type":"streamable-http","url":"http://` + addr + `/maps/mcp"}]}`

	if code, b := do(vendorKey, "POST", "/v0.1/publish", strings.Replace(doc, `"description"`, `"descr"`, 1)); code != 400 ||
		!strings.Contains(string(b), `"location":"body"`) || !strings.Contains(string(b), "description") {
		t.Errorf("a server.json without a description: %d %s", code, b)
	}
	if code, b := do(acme, "POST", "/v0.1/publish", doc); code != 403 {
		t.Errorf("a tenant key publishing: %d %s", code, b)
	}
	code, b := do(vendorKey, "POST", "/v0.1/publish", doc)
	if code != 200 || !strings.Contains(string(b), `"status":"live"`) {
		t.Fatalf("publish: %d %s", code, b)
	}
	list := func(tok string) []mcpregistry.ServerResponse {
		t.Helper()
		code, b := do(tok, "GET", "/v0.1/servers", "")
		var l mcpregistry.ServerList
		if err := json.Unmarshal(b, &l); code != 200 || err != nil {
			t.Fatalf("list: %d %s %v", code, b, err)
		}
		return l.Servers
	}
	drilltest.WaitFor(t, 60*time.Second, "both vendors listed", func() bool { return len(list(all)) == 2 })
	if got := list(acme); len(got) != 1 || got[0].Server.Name != "local.toolhub/weather-a" {
		t.Errorf("acme lists %+v; want weather-a alone", got)
	}
	var routes *mcpregistry.ServerResponse
	for _, e := range list(all) {
		if e.Server.Name == "io.github.example/routes" {
			routes = &e
		}
	}
	if routes == nil || routes.Server.Version != "1.0.0" || routes.Server.Title != "Routes" || len(routes.Server.Remotes) != 1 {
		t.Fatalf("tenant all does not list the published vendor as published: %+v", routes)
	}
	if code, _ := do(acme, "GET", "/v0.1/servers/io.github.example%2Froutes/versions/latest", ""); code != 404 {
		t.Errorf("acme reads a vendor hidden from it: %d", code)
	}

	// The entry's remote is the vendor's endpoint on toolhub.
	r := routes.Server.Remotes[0]
	if r.Type != "streamable-http" || r.URL != h.URL()+"/mcp/vendors/routes" {
		t.Fatalf("remote %+v", r)
	}
	tr, err := transport.NewStreamableHTTP(r.URL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + all}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "registry-test", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	tools, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "route" {
		t.Errorf("tools through the remote: %+v %v", tools, err)
	}

	// toolhub tools --query: the tenant's best tools for a goal, with why.
	out, errOut, code := th(t, []string{"TOOLHUB_KEY=" + all}, "tools", "--hub", h.URL(), "--query", "a walking route between two places", "--top-k", "1")
	if code != 0 || !strings.Contains(out, "SCORE") || !strings.Contains(out, "routes__route") || strings.Contains(out, "weather-a__") {
		t.Errorf("tools --query: %d %s %s", code, out, errOut)
	}
	if out, _, _ := th(t, []string{"TOOLHUB_KEY=" + acme}, "tools", "--hub", h.URL(), "--query", "route between two places"); strings.Contains(out, "routes__route") {
		t.Errorf("acme finds a tool it may not see: %s", out)
	}
}
