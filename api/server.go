package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
	"github.com/toolhub/toolhub/registry"
)

// DefaultMaxBodyBytes bounds a request body (4 MiB).
const DefaultMaxBodyBytes = 4 << 20

// DefaultTenant is the tenant of unauthenticated calls when no
// authentication is configured.
const DefaultTenant = "default"

// Options configure a [Server]. A nil *Options, and every zero field, means
// the default.
type Options struct {
	// Version is reported by the MCP servers and /healthz.
	Version string
	// MaxBodyBytes bounds request bodies; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Authenticate returns who a request acts as; nil means every request
	// is an operator calling as DefaultTenant (no authentication: serve on
	// loopback only). An error answers 401.
	Authenticate func(r *http.Request) (auth.Principal, error)
	// DataLevel is a tenant's default privacy level for calls that do not
	// declare one; nil means 0.
	DataLevel func(tenant string) int
	// Vendors returns the vendor list with status for GET /v1/vendors (any
	// JSON-able value); nil serves an empty list.
	Vendors func(ctx context.Context) any
	// Ready reports whether the hub is ready for traffic (/readyz); nil
	// means always.
	Ready func() error
	// Stores, if set, is shown in /readyz's answer under "stores" (which
	// shared store is up and which away), ready or not.
	Stores func() any
	// Heartbeat is the interval of keep-alive pings on MCP streams; zero
	// means 25 s.
	Heartbeat time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Relay reaches vendors' MCP sessions for resources, prompts,
	// completions and logging (relay.go); nil serves tools only.
	Relay Relay
	// Routes adds more handlers (admin, jobs, …) to the mux.
	Routes func(mux *http.ServeMux)
	// Timeouts bound every request's phases (see [Server.HTTPServer]);
	// zero fields mean the defaults.
	Timeouts Timeouts
	// Public reports requests served without authentication (and without
	// a principal), besides /healthz, /readyz and the agent card: the
	// dashboard's static files. Nil means none.
	Public func(r *http.Request) bool
	// Tracing puts each request in an OpenTelemetry server span (a child
	// of the caller's traceparent header); false adds nothing.
	Tracing bool
	// Challenge returns the WWW-Authenticate header of a 401; nil or ""
	// means `Bearer realm="toolhub"`.
	Challenge func() string
	// Sessions bound the MCP sessions of /mcp and /mcp/vendors/{vendor}
	// (sessions.go).
	Sessions SessionOptions
	// DisableFastPath sends every MCP message through mcp-go's server;
	// false answers tools/call and tools/list on the fast path where it
	// can (fastpath.go). Tests compare the two.
	DisableFastPath bool
	// Registry serves the MCP Registry API (registryapi.go); nil serves none.
	Registry *RegistryOptions
	// ToolSearch serves GET /v1/tools?query= and search_tools on /mcp
	// (toolsearch.go); nil serves neither.
	ToolSearch *ToolSearchOptions
}

// Server is toolhub's front door on one HTTP port:
//
//	/mcp                     MCP (streamable HTTP): the whole catalog
//	/mcp/vendors/{vendor}    MCP: one vendor's tools under their own names
//	GET  /v1/tools           the catalog (?format=openai: function-calling specs)
//	POST /v1/tools/{name}/call
//	GET  /v1/resources       vendors' resources and templates (tenant-filtered)
//	GET  /v1/prompts         vendors' prompts (tenant-filtered)
//	POST /v1/tool_calls      an assistant message's tool_calls → role "tool" messages
//	GET  /v1/vendors         vendors with status
//	/healthz, /readyz
type Server struct {
	gw   *hub.Gateway
	cat  *registry.Catalog
	opts Options
	log  *slog.Logger
	mcp  *mcpFront
	mux  *http.ServeMux
	// xorigin refuses state-changing requests from other origins (admit).
	xorigin *http.CrossOriginProtection
}

// NewServer builds the front door. Call Close to stop following the catalog.
func NewServer(gw *hub.Gateway, opts *Options) *Server {
	s := &Server{gw: gw, cat: gw.Catalog()}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxBodyBytes <= 0 {
		s.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.opts.Heartbeat <= 0 {
		s.opts.Heartbeat = 25 * time.Second
	}
	if s.opts.Version == "" {
		s.opts.Version = "dev"
	}
	s.opts.Timeouts.defaults()
	s.xorigin = http.NewCrossOriginProtection()
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.mcp = newMCPFront(s)
	s.mux = http.NewServeMux()
	s.routes()
	return s
}

// Close stops following catalog changes.
func (s *Server) Close() error {
	s.mcp.close()
	return nil
}

// ServeHTTP admits the request (origin, Host, content type, time bounds:
// admit), authenticates it, reads its body (bounded: readBody) and routes
// it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.Tracing {
		s.traced(w, r, s.serve)
		return
	}
	s.serve(w, r)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r) {
		return
	}
	// The A2A agent card is public (A2A discovery); calls to /a2a are not.
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/.well-known/agent-card.json" ||
		s.opts.Public != nil && s.opts.Public(r) {
		if hasBody(r) { // public routes take none: nothing unauthenticated is buffered
			s.refuse(w, r, hub.CodeInvalidRequest, r.URL.Path+" takes no request body")
			return
		}
		if s.opts.Authenticate == nil {
			// Without authentication every caller is the default tenant:
			// the agent card lists what it may call.
			r = r.WithContext(WithPrincipal(r.Context(), auth.Principal{Role: auth.RoleOperator, Tenant: DefaultTenant}))
		}
		s.mux.ServeHTTP(w, r)
		return
	}
	p := auth.Principal{Role: auth.RoleOperator, Tenant: DefaultTenant}
	if s.opts.Authenticate != nil {
		var err error
		if p, err = s.opts.Authenticate(r); err != nil {
			w.Header().Set("WWW-Authenticate", s.challenge())
			if hasBody(r) {
				w.Header().Set("Connection", "close") // the body is not read
			}
			writeError(w, r, &hub.Error{Code: hub.CodeUnauthenticated, Message: err.Error()}, "")
			return
		}
		if eventStream(r) {
			var stop func()
			r, stop = s.recheck(r, p) // a stream ends when its key is revoked or expires
			defer stop()
		}
	}
	if !s.readBody(w, r) {
		return
	}
	// Internal errors are logged with the server's logger (httperr.Write).
	s.mux.ServeHTTP(w, r.WithContext(httperr.WithLogger(WithPrincipal(r.Context(), p), s.log)))
}

func (s *Server) challenge() string {
	if s.opts.Challenge != nil {
		if c := s.opts.Challenge(); c != "" {
			return c
		}
	}
	return `Bearer realm="toolhub"`
}

func (s *Server) routes() {
	all := callers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mcp.httpHandler(s.mcp.server("", TenantFrom(r.Context())), "").ServeHTTP(w, r)
	}))
	s.mux.Handle("/mcp", all)
	s.mux.Handle("/mcp/", all)
	s.mux.Handle("/mcp/vendors/{vendor}", callers(http.HandlerFunc(s.vendorMCP)))
	s.mux.Handle("GET /v1/tools", callers(http.HandlerFunc(s.listTools)))
	s.mux.Handle("POST /v1/tools/{name}/call", callers(http.HandlerFunc(s.callTool)))
	s.mux.Handle("GET /v1/resources", callers(http.HandlerFunc(s.listResources)))
	s.mux.Handle("GET /v1/prompts", callers(http.HandlerFunc(s.listPrompts)))
	s.mux.Handle("POST /v1/tool_calls", callers(http.HandlerFunc(s.toolCalls)))
	s.mux.Handle("GET /v1/vendors", Require(http.HandlerFunc(s.listVendors), auth.RoleOperator, auth.RoleVendor))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.opts.Version})
	})
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		body := map[string]any{"status": "ready", "catalog_version": s.cat.Version()}
		if s.opts.Stores != nil {
			body["stores"] = s.opts.Stores()
		}
		if s.opts.Ready != nil {
			if err := s.opts.Ready(); err != nil {
				body["status"], body["reason"] = "not ready", err.Error()
				writeJSON(w, http.StatusServiceUnavailable, body)
				return
			}
		}
		writeJSON(w, http.StatusOK, body)
	})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: "no route " + r.Method + " " + r.URL.Path + "; see /v1/tools, /mcp, /healthz"}, "")
	})
	s.registryRoutes()
	if s.opts.Routes != nil {
		s.opts.Routes(s.mux)
	}
}

func (s *Server) vendorMCP(w http.ResponseWriter, r *http.Request) {
	v := r.PathValue("vendor")
	// A vendor none of whose tools the caller may call is answered as one
	// that does not exist: vendor ids cannot be probed.
	if registry.ValidateVendorID(v) != nil || !s.vendorVisible(TenantFrom(r.Context()), v) {
		writeError(w, r, &hub.Error{Code: hub.CodeUnknownTool, Message: "no vendor " + v + " with tools you may call; see GET /v1/tools"}, "")
		return
	}
	s.mcp.httpHandler(s.mcp.server(v, TenantFrom(r.Context())), v).ServeHTTP(w, r)
}

type principalKey struct{}

// WithPrincipal returns ctx acting as p.
func WithPrincipal(ctx context.Context, p auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

func withTenant(ctx context.Context, tenant string) context.Context {
	return WithPrincipal(ctx, auth.Principal{Role: auth.RoleTenant, Tenant: tenant})
}

// PrincipalFrom returns who a request was authenticated as.
func PrincipalFrom(ctx context.Context) auth.Principal {
	p, _ := ctx.Value(principalKey{}).(auth.Principal)
	return p
}

// TenantFrom returns the tenant a request calls as ("" for keys that do
// not call tools).
func TenantFrom(ctx context.Context) string { return PrincipalFrom(ctx).Tenant }

// Require answers 403 unless the request's principal has one of roles.
func Require(h http.Handler, roles ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := PrincipalFrom(r.Context()); !p.Is(roles...) {
			writeError(w, r, &hub.Error{Code: hub.CodeForbidden, Message: fmt.Sprintf("this needs a %s key; yours is %s", strings.Join(roles, " or "), orNone(p.Role))}, "")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// callers lets through principals that call tools as a tenant.
func callers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := PrincipalFrom(r.Context()); p.Tenant == "" {
			writeError(w, r, &hub.Error{Code: hub.CodeForbidden, Message: fmt.Sprintf("a %s key does not call tools; use a tenant key", orNone(p.Role))}, "")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// vendorVisible reports whether tenant may call one of vendor's tools.
func (s *Server) vendorVisible(tenant, vendor string) bool {
	for _, t := range s.cat.VendorTools(vendor) {
		if s.gw.Visible(tenant, registry.Entry{Name: t.Catalog, Tool: t}) {
			return true
		}
	}
	return false
}
