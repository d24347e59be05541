package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/toolhub/toolhub/hub"
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
	// Authenticate returns the tenant of a request; nil means every request
	// is DefaultTenant. An error answers 401.
	Authenticate func(r *http.Request) (tenant string, err error)
	// Vendors returns the vendor list with status for GET /v1/vendors (any
	// JSON-able value); nil serves an empty list.
	Vendors func(ctx context.Context) any
	// Ready reports whether the hub is ready for traffic (/readyz); nil
	// means always.
	Ready func() error
	// Heartbeat is the interval of keep-alive pings on MCP streams; zero
	// means 25 s.
	Heartbeat time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Routes adds more handlers (admin, jobs, …) to the mux.
	Routes func(mux *http.ServeMux)
}

// Server is toolhub's front door on one HTTP port:
//
//	/mcp                     MCP (streamable HTTP): the whole catalog
//	/mcp/vendors/{vendor}    MCP: one vendor's tools under their own names
//	GET  /v1/tools           the catalog (?format=openai: function-calling specs)
//	POST /v1/tools/{name}/call
//	GET  /v1/vendors         vendors with status
//	/healthz, /readyz
type Server struct {
	gw   *hub.Gateway
	cat  *registry.Catalog
	opts Options
	log  *slog.Logger
	mcp  *mcpFront
	mux  *http.ServeMux
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

// ServeHTTP authenticates the request and routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		s.mux.ServeHTTP(w, r)
		return
	}
	tenant := DefaultTenant
	if s.opts.Authenticate != nil {
		t, err := s.opts.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolhub"`)
			writeError(w, &hub.Error{Code: hub.CodeUnauthenticated, Message: err.Error()}, "")
			return
		}
		tenant = t
	}
	s.mux.ServeHTTP(w, r.WithContext(withTenant(r.Context(), tenant)))
}

func (s *Server) routes() {
	all := s.mcp.httpHandler(s.mcp.all, "")
	s.mux.Handle("/mcp", all)
	s.mux.Handle("/mcp/", all)
	s.mux.HandleFunc("/mcp/vendors/{vendor}", s.vendorMCP)
	s.mux.HandleFunc("GET /v1/tools", s.listTools)
	s.mux.HandleFunc("POST /v1/tools/{name}/call", s.callTool)
	s.mux.HandleFunc("GET /v1/vendors", s.listVendors)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.opts.Version})
	})
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Ready != nil {
			if err := s.opts.Ready(); err != nil {
				writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "reason": err.Error()})
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "catalog_version": s.cat.Version()})
	})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &hub.Error{Code: hub.CodeInvalidRequest, Message: "no route " + r.Method + " " + r.URL.Path + "; see /v1/tools, /mcp, /healthz"}, "")
	})
	if s.opts.Routes != nil {
		s.opts.Routes(s.mux)
	}
}

func (s *Server) vendorMCP(w http.ResponseWriter, r *http.Request) {
	v := r.PathValue("vendor")
	if registry.ValidateVendorID(v) != nil || len(s.cat.VendorTools(v)) == 0 && !s.mcp.hasVendor(v) {
		writeError(w, &hub.Error{Code: hub.CodeUnknownTool, Message: "no vendor " + v + " with tools; see GET /v1/vendors"}, "")
		return
	}
	s.mcp.httpHandler(s.mcp.vendorServer(v), v).ServeHTTP(w, r)
}

type tenantKey struct{}

func withTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantFrom returns the tenant a request was authenticated as.
func TenantFrom(ctx context.Context) string {
	if t, ok := ctx.Value(tenantKey{}).(string); ok {
		return t
	}
	return DefaultTenant
}
