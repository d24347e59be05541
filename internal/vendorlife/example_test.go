package vendorlife_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/internal/vendorlife"
	"github.com/toolhub/toolhub/netguard"
	"github.com/toolhub/toolhub/registry"
)

// A vendor registers itself, asks to receive more private data (which
// waits for an operator), the operator approves, then rolls back to the
// first version.
func Example() {
	// The vendor's MCP server, with one tool.
	mcpSrv := server.NewMCPServer("acme", "1.0.0")
	mcpSrv.AddTool(mcp.NewToolWithRawSchema("echo", "says it back", json.RawMessage(`{"type":"object"}`)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("hi"), nil
		})
	vendorSrv := httptest.NewServer(server.NewStreamableHTTPServer(mcpSrv))
	defer vendorSrv.Close()

	guard, err := netguard.New(netguard.Options{Allow: []string{"127.0.0.1"}})
	if err != nil {
		panic(err)
	}
	var audits []string
	life := vendorlife.New(&vendorlife.Options{
		Store:     registry.NewMemoryStore(),
		Approvals: approval.NewMemory(),
		Catalog:   registry.NewCatalog(),
		Guard:     guard,
		Audit:     func(_ context.Context, action, _ string, _, _ any) { audits = append(audits, action) },
		Logger:    slog.New(slog.DiscardHandler),
	})

	vendor := api.WithPrincipal(context.Background(), auth.Principal{Role: auth.RoleVendor, Vendor: "acme", KeyID: "k1"})
	operator := api.WithPrincipal(context.Background(), auth.Principal{Role: auth.RoleOperator, KeyID: "k0"})
	spec := registry.Vendor{ID: "acme", MCP: &registry.MCPSpec{Transport: registry.TransportHTTP, URL: vendorSrv.URL}}

	c, err := life.Register(vendor, spec, true)
	fmt.Println(c.Status, c.Version, c.Tools, err)

	spec.MaxDataLevel = 2 // location and contacts: an operator decides
	c, err = life.Register(vendor, spec, false)
	fmt.Println(c.Status, c.Breaking, err)

	c, err = life.Decide(operator, "acme", true)
	fmt.Println(c.Status, c.Version, err)

	c, err = life.Rollback(operator, "acme", 1)
	fmt.Println(c.Status, c.Version, err)

	versions, _ := life.Versions(vendor, "acme")
	for _, v := range versions {
		fmt.Println("version", v.Version, "max_data_level", v.Vendor.MaxDataLevel)
	}
	fmt.Println("audit log:", audits)
	// Output:
	// live 1 [echo] <nil>
	// pending_approval [privacy: max_data_level raised from 0 to 2] <nil>
	// live 2 <nil>
	// live 3 <nil>
	// version 1 max_data_level 0
	// version 2 max_data_level 2
	// version 3 max_data_level 0
	// audit log: [vendor.register vendor.pending vendor.update vendor.approve vendor.update vendor.rollback]
}
