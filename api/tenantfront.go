package api

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/registry"
)

// frontKey names one MCP server of the front door: a vendor's virtual
// server ("" for the whole catalog) as one tenant sees it.
type frontKey struct{ vendor, tenant string }

// frontServer is one tenant's server and the signature of what that
// tenant saw at its last SetTools.
type frontServer struct {
	srv  *server.MCPServer
	once sync.Once  // the first fill, which callers of a new server wait for
	mu   sync.Mutex // one refresh at a time: a late one must not undo a newer one
	sig  string
}

// unsetSig is the signature of a server not filled yet.
const unsetSig = "\x00unset"

// server returns the MCP server of vendor ("" for the whole catalog) for
// tenant, made (and filled) at its first use. Each tenant has its own, so
// that notifications/tools/list_changed, which mcp-go sends to every
// client of a server, goes only to the tenants whose view changed.
func (f *mcpFront) server(vendor, tenant string) *server.MCPServer {
	k := frontKey{vendor, tenant}
	f.mu.Lock()
	fs, ok := f.servers[k]
	if !ok {
		name := "toolhub"
		if vendor != "" {
			name = "toolhub/" + vendor
		}
		fs = &frontServer{srv: f.newServer(vendor, name), sig: unsetSig}
		f.servers[k] = fs
	}
	f.mu.Unlock()
	fs.once.Do(func() { f.refresh(k); f.fillRelay(k) })
	return fs.srv
}

// keys returns the servers of vendor ("" for the whole catalog).
func (f *mcpFront) keys(vendor string) []frontKey {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []frontKey
	for k := range f.servers {
		if k.vendor == vendor {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b frontKey) int { return strings.Compare(a.tenant, b.tenant) })
	return out
}

// refreshAll applies a catalog change to every tenant's whole-catalog
// server.
func (f *mcpFront) refreshAll() {
	for _, k := range f.keys("") {
		f.refresh(k)
	}
}

// refreshVendor applies a change of vendor's tools to every tenant's
// server of that vendor.
func (f *mcpFront) refreshVendor(vendor string) {
	for _, k := range f.keys(vendor) {
		f.refresh(k)
	}
}

// refresh gives a server the catalog's tools when, and only when, what
// its tenant may see has changed (the tools it lists, each by identity:
// a re-registered tool is a new *registry.Tool). The server holds every
// tool (its tool filter hides the others at tools/list, as before); tools
// the tenant cannot see may be stale there, which no caller can tell.
func (f *mcpFront) refresh(k frontKey) {
	f.mu.Lock()
	fs := f.servers[k]
	f.mu.Unlock()
	if fs == nil {
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	// The signature first: the tools are built only for a server whose
	// tenant's view changed.
	var sig strings.Builder
	var entries []registry.Entry
	if k.vendor == "" {
		entries = f.s.cat.Entries(nil)
		for _, e := range entries {
			if _, ok := f.s.gw.Lookup(k.tenant, e.Name); ok {
				fmt.Fprintf(&sig, "%s\x00%p\x00%p\n", e.Name, e.Tool, e.Capability)
			}
		}
	} else {
		for _, t := range f.s.cat.VendorTools(k.vendor) {
			entries = append(entries, registry.Entry{Name: t.Catalog, Tool: t})
			if _, ok := f.resolve(k.vendor, k.tenant, t.Def.Name); ok {
				fmt.Fprintf(&sig, "%s\x00%p\n", t.Catalog, t)
			}
		}
	}
	if fs.sig == sig.String() {
		return
	}
	first := fs.sig == unsetSig
	fs.sig = sig.String()
	if k.vendor == "" && !first {
		// The vendors the tenant sees may have changed with its tools:
		// their resources and prompts are on its server, no others.
		defer f.fillAggregate(k)
	}
	tools := make([]server.ServerTool, 0, len(entries))
	for _, e := range entries {
		name := e.Name
		if k.vendor != "" {
			name = e.Tool.Def.Name
		}
		tools = append(tools, server.ServerTool{Tool: mcpTool(name, e), Handler: f.handler(e.Name)})
		if c := e.Capability; k.vendor == "" && c != nil && c.Name != e.Name {
			// Callable by its dotted name too, as over REST and the CLI.
			tools = append(tools, server.ServerTool{Tool: mcpTool(c.Name, e), Handler: f.handler(e.Name)})
		}
	}
	tools = append(tools, f.searchServerTools(k.vendor)...)
	fs.srv.SetTools(tools...)
}
