package api

import (
	"context"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/registry"
)

// The whole-catalog endpoint /mcp serves the resources, templates and
// prompts of every vendor, named reversibly like tools: a prompt as
// "<vendor>__<name>", a resource URI as "toolhub://<vendor>/<the vendor's
// URI>" (a template likewise, so its expansions map back too).

// ScopedURIPrefix starts a vendor-scoped resource URI on /mcp.
const ScopedURIPrefix = "toolhub://"

// ScopedURI returns the URI /mcp shows for a vendor's resource URI.
func ScopedURI(vendor, uri string) string { return ScopedURIPrefix + vendor + "/" + uri }

// UnscopeURI maps a URI of /mcp back to its vendor and the vendor's URI.
func UnscopeURI(scoped string) (vendor, uri string, ok bool) {
	rest, ok := strings.CutPrefix(scoped, ScopedURIPrefix)
	if !ok {
		return "", "", false
	}
	vendor, uri, ok = strings.Cut(rest, "/")
	if !ok || registry.ValidateVendorID(vendor) != nil || uri == "" {
		return "", "", false
	}
	return vendor, uri, true
}

// ScopedPrompt returns the name /mcp shows for a vendor's prompt.
func ScopedPrompt(vendor, name string) string { return vendor + "__" + name }

// UnscopePrompt maps a prompt name of /mcp back to its vendor and name.
func UnscopePrompt(scoped string) (vendor, name string, ok bool) {
	vendor, name, ok = strings.Cut(scoped, "__")
	if !ok || registry.ValidateVendorID(vendor) != nil || name == "" {
		return "", "", false
	}
	return vendor, name, true
}

// aggregateOptions are the whole-catalog server's options for resources,
// templates, prompts and completions.
func (f *mcpFront) aggregateOptions() []server.ServerOption {
	visibleURI := func(ctx context.Context, uri string) bool {
		v, _, ok := UnscopeURI(uri)
		return ok && f.s.gw.VendorVisible(TenantFrom(ctx), v)
	}
	hooks := &server.Hooks{}
	hooks.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		out := res.Resources[:0]
		for _, r := range res.Resources {
			if visibleURI(ctx, r.URI) {
				out = append(out, r)
			}
		}
		res.Resources = out
	})
	hooks.AddAfterListResourceTemplates(func(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
		out := res.ResourceTemplates[:0]
		for _, t := range res.ResourceTemplates {
			if t.Name != catchAllTemplate && t.URITemplate != nil && visibleURI(ctx, t.URITemplate.Raw()) {
				out = append(out, t)
			}
		}
		res.ResourceTemplates = out
	})
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if v, uri, ok := UnscopeURI(req.Params.URI); ok && f.s.gw.VendorVisible(TenantFrom(ctx), v) {
			f.subscribeAs(ctx, "", v, uri, false)
		}
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if v, uri, ok := UnscopeURI(req.Params.URI); ok {
			f.subscribeAs(ctx, "", v, uri, true)
		}
	})
	hooks.AddOnUnregisterSession(func(ctx context.Context, s server.ClientSession) {
		if f.s.opts.Relay != nil {
			f.dropSession("", s.SessionID())
		}
	})
	comp := &aggregateCompletion{f: f}
	return []server.ServerOption{
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(comp),
		server.WithResourceCompletionProvider(comp),
		server.WithPromptFilter(func(ctx context.Context, ps []mcp.Prompt) []mcp.Prompt {
			out := ps[:0:0]
			for _, p := range ps {
				if v, _, ok := UnscopePrompt(p.Name); ok && f.s.gw.VendorVisible(TenantFrom(ctx), v) {
					out = append(out, p)
				}
			}
			return out
		}),
		server.WithHooks(hooks),
	}
}

// refreshAggregate puts the resources, templates and prompts of every
// vendor a tenant can see on its /mcp server under their scoped names.
func (f *mcpFront) refreshAggregate() {
	for _, k := range f.keys("") {
		f.fillAggregate(k)
	}
}

// fillAggregate fills k's whole-catalog server.
func (f *mcpFront) fillAggregate(k frontKey) {
	srv := f.serverOf(k)
	if f.s.opts.Relay == nil || srv == nil {
		return
	}
	vendors := f.s.cat.Vendors()
	sort.Strings(vendors)
	var (
		rs []server.ServerResource
		ts []server.ServerResourceTemplate
		ps []server.ServerPrompt
	)
	for _, v := range vendors {
		s, ok := f.s.opts.Relay.Surface(v)
		if !ok || !f.s.gw.VendorVisible(k.tenant, v) {
			// A vendor the tenant cannot see is not on its server at all,
			// so that reading its URIs answers exactly as reading a
			// vendor's that does not exist (issue 32, item 6).
			continue
		}
		read := f.readScoped(v)
		for _, r := range s.Resources {
			r.URI = ScopedURI(v, r.URI)
			rs = append(rs, server.ServerResource{Resource: r, Handler: read})
		}
		for _, t := range s.Templates {
			if t.URITemplate == nil {
				continue
			}
			st, err := scopedTemplate(v, t)
			if err != nil {
				f.s.log.Debug("resource template left out of /mcp", "vendor", v, "template", t.URITemplate.Raw(), "error", err)
				continue
			}
			ts = append(ts, server.ServerResourceTemplate{Template: st, Handler: server.ResourceTemplateHandlerFunc(read)})
		}
		if s.Capabilities.Resources != nil {
			// Reads of URIs the vendor did not list.
			ts = append(ts, server.ServerResourceTemplate{
				Template: mcp.NewResourceTemplate(ScopedURI(v, "{+uri}"), catchAllTemplate), Handler: server.ResourceTemplateHandlerFunc(read)})
		}
		get := f.getPrompt(v)
		for _, p := range s.Prompts {
			name := p.Name
			p.Name = ScopedPrompt(v, name)
			ps = append(ps, server.ServerPrompt{Prompt: p, Handler: func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				req.Params.Name = name
				return get(ctx, req)
			}})
		}
	}
	srv.SetResources(rs...)
	srv.SetResourceTemplates(ts...)
	srv.SetPrompts(ps...)
}

// scopedTemplate returns a vendor's template under its scoped URI.
func scopedTemplate(vendor string, t mcp.ResourceTemplate) (st mcp.ResourceTemplate, err error) {
	defer func() {
		if r := recover(); r != nil { // uritemplate.MustNew on a template the vendor sent
			err = errBadTemplate
		}
	}()
	st = t
	nt := mcp.NewResourceTemplate(ScopedURI(vendor, t.URITemplate.Raw()), t.Name)
	st.URITemplate = nt.URITemplate
	return st, nil
}

var errBadTemplate = &templateError{}

type templateError struct{}

func (*templateError) Error() string { return "the vendor's URI template does not parse" }

// readScoped reads a scoped URI of vendor's and gives the contents back
// under the scoped URI.
func (f *mcpFront) readScoped(vendor string) server.ResourceHandlerFunc {
	read := f.readResource(vendor)
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		scoped := req.Params.URI
		_, uri, ok := UnscopeURI(scoped)
		if !ok {
			return nil, server.ErrResourceNotFound
		}
		req.Params.URI = uri
		cs, err := read(ctx, req)
		if err != nil {
			return nil, err
		}
		for i, c := range cs {
			switch c := c.(type) {
			case mcp.TextResourceContents:
				c.URI = ScopedURI(vendor, c.URI)
				cs[i] = c
			case mcp.BlobResourceContents:
				c.URI = ScopedURI(vendor, c.URI)
				cs[i] = c
			}
		}
		return cs, nil
	}
}

// aggregateCompletion relays completion/complete for /mcp's scoped names.
type aggregateCompletion struct{ f *mcpFront }

func (c *aggregateCompletion) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	v, n, ok := UnscopePrompt(name)
	if !ok {
		return &mcp.Completion{Values: []string{}}, nil
	}
	return (&relayCompletion{f: c.f, vendor: v}).CompletePromptArgument(ctx, n, arg, cc)
}

func (c *aggregateCompletion) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	v, u, ok := UnscopeURI(uri)
	if !ok {
		return &mcp.Completion{Values: []string{}}, nil
	}
	return (&relayCompletion{f: c.f, vendor: v}).CompleteResourceArgument(ctx, u, arg, cc)
}
