package vendorlife_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/vendorlife"
	"github.com/toolhub/toolhub/netguard"
	"github.com/toolhub/toolhub/registry"
)

// vendorServer is a real MCP server over streamable HTTP with the named tools.
func vendorServer(t *testing.T, tools ...string) string {
	t.Helper()
	s := server.NewMCPServer("v", "1.0.0")
	for _, name := range tools {
		s.AddTool(mcp.NewToolWithRawSchema(name, name, json.RawMessage(`{"type":"object"}`)),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			})
	}
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	return srv.URL
}

type fixture struct {
	life    *vendorlife.Lifecycle
	cat     *registry.Catalog
	store   registry.Store
	applied int
	audits  []string
	stdio   bool
}

func newFixture(t *testing.T, declared ...string) *fixture {
	t.Helper()
	guard, err := netguard.New(netguard.Options{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{cat: registry.NewCatalog(), store: registry.NewMemoryStore()}
	f.life = vendorlife.New(&vendorlife.Options{
		Store: f.store, Approvals: approval.NewMemory(), Catalog: f.cat, Guard: guard,
		Declared: func(id string) bool {
			for _, d := range declared {
				if d == id {
					return true
				}
			}
			return false
		},
		AllowStdio: func() bool { return f.stdio },
		Apply:      func(context.Context) error { f.applied++; return nil },
		Audit:      func(_ context.Context, action, _ string, _, _ any) { f.audits = append(f.audits, action) },
		Logger:     slog.New(slog.DiscardHandler),
	})
	return f
}

func as(role, vendor string) context.Context {
	return api.WithPrincipal(context.Background(), auth.Principal{Role: role, Vendor: vendor, KeyID: role + "-key"})
}

func httpSpec(id, url string) registry.Vendor {
	return registry.Vendor{ID: id, MCP: &registry.MCPSpec{Transport: registry.TransportHTTP, URL: url}}
}

func TestWhoMayChangeWhat(t *testing.T) {
	url := vendorServer(t, "a")
	f := newFixture(t, "from-config")
	for _, tc := range []struct {
		name string
		ctx  context.Context
		spec registry.Vendor
		want hub.Code
	}{
		{"another vendor's id", as(auth.RoleVendor, "acme"), httpSpec("other", url), hub.CodeForbidden},
		{"a tenant key", as(auth.RoleTenant, ""), httpSpec("acme", url), hub.CodeForbidden},
		{"declared in the config", as(auth.RoleOperator, ""), httpSpec("from-config", url), hub.CodeForbidden},
		{"stdio by a vendor key", as(auth.RoleVendor, "acme"), registry.Vendor{ID: "acme", MCP: &registry.MCPSpec{Transport: registry.TransportStdio, Command: "true"}}, hub.CodeForbidden},
		{"stdio by an operator, not allowed", as(auth.RoleOperator, ""), registry.Vendor{ID: "acme", MCP: &registry.MCPSpec{Transport: registry.TransportStdio, Command: "true"}}, hub.CodeForbidden},
		{"unreachable", as(auth.RoleVendor, "acme"), httpSpec("acme", "http://127.0.0.1:1/mcp"), hub.CodeUnavailable},
		{"its own vendor", as(auth.RoleVendor, "acme"), httpSpec("acme", url), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.life.Register(tc.ctx, tc.spec, true)
			if got := hub.CodeOf(err); got != tc.want {
				t.Errorf("code %q, want %q (%v)", got, tc.want, err)
			}
		})
	}
}

// A rollback by a vendor key to a version that served more tools than the
// live one is fine; one that loosens privacy waits for an operator, like
// the same change by PUT (issue 12, defects 6 and 7).
func TestRollbackNeedsTheSameApproval(t *testing.T) {
	url := vendorServer(t, "a")
	f := newFixture(t)
	vendor, operator := as(auth.RoleVendor, "acme"), as(auth.RoleOperator, "")
	spec := httpSpec("acme", url)
	spec.MaxDataLevel = 2
	if _, err := f.life.Register(operator, spec, true); err != nil { // v1: level 2, an operator's doing
		t.Fatal(err)
	}
	spec.MaxDataLevel = 0
	if c, err := f.life.Register(vendor, spec, false); err != nil || c.Status != vendorlife.StatusLive || c.Version != 2 {
		t.Fatalf("lowering the level: %+v %v", c, err) // sends the vendor less: no approval
	}
	c, err := f.life.Rollback(vendor, "acme", 1)
	if err != nil || c.Status != vendorlife.StatusPending {
		t.Fatalf("vendor rollback to level 2: %+v %v", c, err)
	}
	if rec, _ := f.store.GetVendor(vendor, "acme"); rec.Version != 2 || rec.Vendor.MaxDataLevel != 0 {
		t.Fatalf("the pending rollback went live: %+v", rec)
	}
	pending, _ := f.life.Pending(operator)
	if len(pending) != 1 || pending[0].SubmittedBy.Vendor != "acme" {
		t.Fatalf("pending: %+v", pending)
	}
	if c, err := f.life.Decide(operator, "acme", true); err != nil || c.Status != vendorlife.StatusLive || c.Version != 3 {
		t.Fatalf("approve: %+v %v", c, err)
	}
	if _, err := f.life.Decide(operator, "acme", true); hub.CodeOf(err) != hub.CodeInvalidRequest {
		t.Errorf("a second decision: %v", err)
	}
	if err := f.life.Remove(vendor, "acme"); err != nil {
		t.Fatal(err)
	}
	want := []string{"vendor.register", "vendor.update", "vendor.pending", "vendor.update", "vendor.approve", "vendor.remove"}
	if len(f.audits) != len(want) {
		t.Fatalf("audit %v, want %v", f.audits, want)
	}
	for i := range want {
		if f.audits[i] != want[i] {
			t.Fatalf("audit %v, want %v", f.audits, want)
		}
	}
	if f.applied != 4 { // register, update, approve, remove
		t.Errorf("applied %d times", f.applied)
	}
}
