package hub

import (
	"context"
	"fmt"

	"github.com/toolhub/toolhub/registry"
)

// Relay runs a relayed MCP request that is not a tool call (c.Method, such
// as resources/read or prompts/get) to c.Vendor's session through the same
// governance as a tool call: the outer middlewares (decision log, metering),
// the tenant filter, the call middlewares (budgets; a cache middleware must
// pass a call with a Method through, see [Call].Method), and the vendor
// middlewares (limits, bulkhead, breaker, retries), but not a capability's
// chain. The call is named "<vendor>__<method>" in the log and its tool is
// the method in the ledger and the reports (priced by the vendor's
// catch-all price, or by a price for the method itself).
func (g *Gateway) Relay(ctx context.Context, vendor string, c *Call) (*Result, error) {
	if c.Method == "" {
		return nil, &Error{Code: CodeInternal, Message: "a relayed request needs its method"}
	}
	tool := &registry.Tool{Vendor: vendor, Catalog: vendor + "__" + c.Method, Def: registry.ToolDef{Name: c.Method}}
	c.Name = tool.Catalog
	if c.ID == "" {
		c.ID = NewCallID()
	}
	if c.Start.IsZero() {
		c.Start = g.opts.Now()
	}
	if c.Trace == nil {
		c.Trace = &Trace{}
	}
	inner := InvokerFunc(func(ctx context.Context, c *Call) (*Result, error) {
		if !g.VendorVisible(c.Tenant, vendor) {
			return nil, &Error{Code: CodeUnknownTool, Message: fmt.Sprintf("no vendor %q for this tenant", vendor)}
		}
		c.Tool = tool
		return Chain(g.vendor, g.opts.Call...).Invoke(ctx, c)
	})
	r, err := Chain(inner, g.opts.Outer...).Invoke(ctx, c)
	return g.answer(c, r, err)
}

// VendorVisible reports whether tenant may reach vendor's session for what
// is not a tool (resources, prompts, completions): it may when it sees at
// least one of the vendor's tools.
func (g *Gateway) VendorVisible(tenant, vendor string) bool {
	for _, t := range g.cat.VendorTools(vendor) {
		if g.Visible(tenant, registry.Entry{Name: t.Catalog, Tool: t}) {
			return true
		}
	}
	return false
}
