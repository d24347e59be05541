// Package app wires toolhub together from a config: the catalog, the
// vendor connections, the gateway and the front door. cmd/toolhub calls it;
// tests use it to run a whole hub in process. Where state lives (data
// folder, Redis, PostgreSQL) is internal/backend's choice: app takes the
// stores it opens and never branches on it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/audit"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/tracing"
	"github.com/toolhub/toolhub/internal/backend"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/internal/vendorlife"
	"github.com/toolhub/toolhub/internal/x/telemetry"
	"github.com/toolhub/toolhub/netguard"
	"github.com/toolhub/toolhub/orchestrator"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/servers"
	"github.com/toolhub/toolhub/ui"
)

// Options configure an [App]. A nil *Options means the defaults.
type Options struct {
	Version   string
	Logger    *slog.Logger                // nil: slog.Default()
	LookupEnv func(string) (string, bool) // for ${VAR} in vendor specs; nil: os.LookupEnv
	// MCPProtocol pins the MCP revision toolhub offers its MCP vendors; ""
	// means servers.DefaultProtocolVersion (the conformance tests run each).
	MCPProtocol string
	// ScanTools, if set, is shown every vendor tool version about to be
	// served that no operator approved; a finding holds the tool for an
	// operator, with the findings as its reasons (registry.PinnerOptions.Scan).
	// nil: no scan.
	ScanTools func(registry.ToolText) []registry.Finding
}

// App is one running toolhub.
type App struct {
	log     *slog.Logger
	opts    Options
	Catalog *registry.Catalog
	Store   registry.Store
	Manager *servers.Manager
	A2A     *a2a.Manager // A2A agents as vendors
	Agent   *a2a.Server  // toolhub as an A2A agent
	Planner *orchestrator.Planner
	Gateway *hub.Gateway
	Gov     *govern.Governor
	API     *api.Server
	Cache   *cache.Layer     // result cache, stale-while-revalidate, last known good
	Modes   *fallback.Modes  // degradation mode per capability
	Router  *fallback.Router // capability chains: vendors → stale → queue
	Jobs    *jobs.Queue      // durable async jobs
	Keys    auth.Store       // API keys (data/keys.db, or PostgreSQL)
	Ledger  billing.Ledger   // usage events (SQLite ledger.db, or PostgreSQL)
	Meter   *billing.Meter   // events off the call path, with a durable spill
	Budgets *billing.Budgets // reservations that stop spending
	Guard   *netguard.Policy // where vendor URLs may point
	// Decisions keeps the last decision-log lines for the dashboard (/ui).
	Decisions *ui.Recorder

	metrics   *prometheus.Registry
	pool      *jobs.Pool
	privacy   atomic.Pointer[privacy]
	auditLog  audit.Log      // audit.jsonl, or PostgreSQL (security.go)
	approvals approval.Store // vendor changes waiting for an operator (security.go)

	mu      sync.Mutex // serialises reloads
	cfg     atomic.Pointer[config.Config]
	tenants atomic.Pointer[map[string]*registry.Tenant]
	specs   atomic.Pointer[map[string]registry.Vendor] // vendors in force, by id
	// pinPolicy is each vendor's pin policy in force (a vendor not in it:
	// strict); pins gates the catalog with it (pins.go).
	pinPolicy atomic.Pointer[map[string]string]
	pins      *registry.Pinner
	probing   map[string]string // vendor → probe spec being run (under mu)
	// stores are every store, embedded or shared (internal/backend).
	stores *backend.Stores
	// cleanups undo what New did, last first: [App.Close] runs them, and
	// so does a New that fails half way.
	cleanups backend.Cleanups
	ctx      context.Context // the app's lifetime: probes
	cancel   context.CancelFunc
	wakeKick chan struct{} // a vendor can take traffic again: wake waiting jobs (jobs.go)
	// telemetry is the OpenTelemetry tracing in force; tracer is nil when
	// it is off (telemetry.go).
	telemetry *telemetry.Tracing
	tracer    *tracing.Tracer
	oauth     atomic.Pointer[oauthState] // OAuth access tokens (oauth.go)
	// life registers, versions, approves and rolls back vendors at run
	// time (admin.go, package vendorlife).
	life *vendorlife.Lifecycle
	// regTimes: when vendors' specs went in force (registryapi.go).
	regTimes specTimes
}

// New builds a hub from cfg and starts connecting to its vendors. Vendors
// that are down do not stop it: they show as unavailable and are retried.
// A New that fails closes what it opened and stops what it started.
func New(ctx context.Context, cfg *config.Config, opts *Options) (_ *App, err error) {
	a := &App{probing: map[string]string{}, wakeKick: make(chan struct{}, 1)}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.cleanups.AddFunc(a.cancel) // runs last; Close cancels early too (below)
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.LookupEnv == nil {
		a.opts.LookupEnv = os.LookupEnv
	}
	a.log = a.opts.Logger
	if a.log == nil {
		a.log = slog.Default()
	}
	if err := a.startTelemetry(ctx, cfg); err != nil {
		return nil, err
	}
	a.cleanups.AddFunc(a.stopTelemetry)
	if a.stores, err = backend.Open(ctx, storesConfig(cfg, a.log)); err != nil {
		return nil, err
	}
	a.cleanups.AddCloser(a.stores)
	a.Store, a.Keys, a.auditLog, a.approvals, a.Ledger = a.stores.Registry, a.stores.Keys, a.stores.Audit, a.stores.Approvals, a.stores.Ledger
	guard := netguard.Options{Allow: cfg.Outbound.Allow, Deny: cfg.Outbound.Deny}
	if cfg.Outbound.LoopbackOnly {
		guard.Sandbox = &netguard.Sandbox{OnRefuse: func(addr string) {
			a.log.Warn("outbound: loopback_only refused traffic off this machine", "addr", addr)
		}}
	}
	if a.Guard, err = netguard.New(guard); err != nil {
		return nil, err
	}
	a.Catalog = registry.NewCatalog()
	a.startPins()              // pins.go
	a.life = a.newVendorLife() // admin.go
	a.Manager = servers.NewManager(a.Catalog, &servers.Options{Logger: a.log, LookupEnv: a.opts.LookupEnv, HTTPClient: a.vendorClient(),
		ProtocolVersion: a.opts.MCPProtocol})
	a.cleanups.Add(a.Manager.Close)
	// Card and interface URLs come from vendors: the same outbound guard.
	a.A2A = a2a.NewManager(a.Catalog, &a2a.Options{Logger: a.log, HTTPClient: a.vendorClient(), LookupEnv: a.opts.LookupEnv})
	a.cleanups.Add(a.A2A.Close)
	a.metrics = prometheus.NewRegistry()
	a.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The decision log goes to the app's logger and into the dashboard's ring.
	a.Decisions = ui.NewRecorder(a.log.Handler(), 0)
	gopts := a.governOptions(cfg, a.stores.Limiter)
	gopts.Registerer = a.metrics
	a.Gov = govern.New(gopts)
	a.cleanups.Add(a.Gov.Close) // after the front doors: the lines still queued
	a.cleanups.AddFunc(a.stopProbes)
	if err := a.degradation(cfg); err != nil {
		return nil, err
	}
	if err := a.metering(ctx, cfg); err != nil {
		return nil, err
	}
	a.Gateway = a.newGateway(cfg)
	a.Agent = a.newAgent(cfg)
	llmKey, _ := a.opts.LookupEnv("TOOLHUB_LLM_API_KEY")
	if a.Planner, err = orchestrator.New(cfg.Planner, a.Gateway, a.Catalog, llmKey); err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	a.Planner.Keywords = a.plannerKeywords
	a.API = api.NewServer(a.Gateway, a.apiOptions(cfg))
	a.cleanups.Add(a.API.Close)
	a.sessionMetrics()
	a.storeMetrics()
	if err := a.apply(ctx, cfg); err != nil {
		return nil, err
	}
	go a.followRegistry()
	a.startWork(cfg)
	return a, nil
}

// newGateway assembles the call pipeline (docs/architecture.md): outer
// (decision log, meter), call (result scan, modes, budgets, cache), the
// capability route, vendor (governor, attempt meter).
func (a *App) newGateway(cfg *config.Config) *hub.Gateway {
	return hub.NewGateway(a.Catalog, hub.UpstreamsFunc(a.upstream), &hub.Options{
		Logger:         a.log,
		DefaultTimeout: cfg.Timeout.D(),
		Timeout:        a.timeout,
		Deadline:       a.callDeadline,
		Visible:        a.visible,
		Outer:          a.tracedOuter(a.Gov.OuterMiddleware(), a.Meter.Middleware()),
		Call:           []hub.Middleware{a.resultScan(), a.Modes.Gate(), a.Budgets.Middleware(), a.Cache.Middleware()},
		Route:          a.Router.Route,
		Vendor:         a.tracedVendor(a.Gov.VendorMiddleware(), a.Meter.AttemptMiddleware()),
		MaxDataLevel:   a.maxDataLevel,
		Redact:         a.redact,
	})
}

// newAgent is toolhub as an A2A agent. The card lists capabilities and
// every vendor tool as skills; a plain text message that names none goes
// to the planner.
func (a *App) newAgent(cfg *config.Config) *a2a.Server {
	agentOpts := &a2a.ServerOptions{Version: a.opts.Version, Tenant: api.TenantFrom, Logger: a.log, Planner: goalRunner{a}, VendorTools: true}
	if cfg.Auth.Enabled {
		agentOpts.SecuritySchemes = sdk.NamedSecuritySchemes{"bearer": sdk.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "toolhub tenant key"}}
		agentOpts.SecurityRequirements = sdk.SecurityRequirementsOptions{{"bearer": {}}}
	}
	a.agentTasks(agentOpts)
	return a2a.NewServer(a.Gateway, a.Catalog, agentOpts)
}

// apiOptions are the front door's options: sessions, bounds, and the
// routes around the call path.
func (a *App) apiOptions(cfg *config.Config) *api.Options {
	apiOpts := &api.Options{
		Version:      a.opts.Version,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Timeouts:     httpTimeouts(cfg.HTTP),
		Sessions: api.SessionOptions{MaxPerKey: cfg.MCP.MaxSessionsPerKey, MaxTotal: cfg.MCP.MaxSessions,
			IdleTimeout: cfg.MCP.SessionIdleTimeout.D()},
		Logger:    a.log,
		DataLevel: a.tenantDataLevel,
		Relay:     a.Manager,
		Vendors:   func(ctx context.Context) any { return a.VendorViews(api.PrincipalFrom(ctx)) },
		Routes:    func(mux *http.ServeMux) { a.routes(cfg, mux) },
		Public:    func(r *http.Request) bool { return ui.Public(r, ui.DefaultPrefix) || oauthPublic(r) },
		Stores:    func() any { return a.stores.Health.States() },
		Ready:     a.ready,
		Tracing:   a.tracer != nil,
		Challenge: a.challenge,
	}
	apiOpts.Registry = a.registryOptions(cfg.Auth.Enabled)
	apiOpts.ToolSearch = a.toolSearch(cfg)
	if cfg.Auth.Enabled {
		apiOpts.Authenticate = a.authenticate
	}
	return apiOpts
}

// routes mounts the handlers beside the call path: metrics, capabilities,
// the planner, reports, admin, jobs and webhooks, the A2A agent, the
// dashboard and the OAuth metadata.
func (a *App) routes(cfg *config.Config, mux *http.ServeMux) {
	mux.Handle("GET /metrics", api.Require(promhttp.HandlerFor(a.metrics, promhttp.HandlerOpts{}), auth.RoleOperator))
	mux.Handle("GET /v1/capabilities", a.capabilitiesHandler()) // only those the caller may see
	mux.Handle("POST /v1/plan", &orchestrator.Handler{Planner: a.Planner, MaxBody: cfg.MaxBodyBytes,
		Tenant: func(r *http.Request) string { return api.TenantFrom(r.Context()) }})
	// Finance and operators see all usage; a tenant its own; a vendor its own.
	mux.Handle("GET /v1/reports/", api.Require(billing.NewHandler(a.Ledger, &billing.HandlerOptions{Scope: reportScope, Audience: reportAudience}),
		auth.RoleFinance, auth.RoleOperator, auth.RoleTenant, auth.RoleVendor))
	mux.Handle("POST /v1/admin/capabilities/{name}/mode", api.Require(a.Modes.AdminHandler(), auth.RoleOperator))
	api.JobRoutes(a.Jobs, &api.JobRoutesOptions{Done: a.ctx.Done(), Logger: a.log, Reauthenticate: a.reauthenticate(cfg)})(mux)
	api.WebhookRoutes(a.Jobs.Webhooks(), a.Guard.CheckURL, cfg.MaxBodyBytes)(mux)
	api.AdminRoutes(a, cfg.MaxBodyBytes)(mux)
	// toolhub as an A2A agent: a public card, calls as a tenant.
	mux.Handle("GET "+a2a.CardPath, a.Agent.CardHandler())
	mux.Handle(a2a.RPCPath, api.Require(a.Agent.Handler(), auth.RoleTenant, auth.RoleOperator))
	// The dashboard: public static files (the page asks for a key and
	// calls the APIs above with it); its decision log is operators'.
	dash := ui.Handler(&ui.Options{Recorder: a.Decisions, Flush: a.Gov.Flush})
	mux.Handle("GET /ui/api/", api.Require(dash, auth.RoleOperator))
	mux.Handle("/ui/", dash)
	mux.Handle("GET /v1/admin/budgets", api.Require(http.HandlerFunc(a.budgetsHandler), auth.RoleOperator, auth.RoleFinance))
	// OAuth protected resource metadata (RFC 9728), public.
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", a.oauthMetadata)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/", a.oauthMetadata)
}

// startWork starts the background work: the job workers, the wake loop,
// the webhook deliveries and the A2A tasks of queued calls.
func (a *App) startWork(cfg *config.Config) {
	// Closing starts here: the workers stop first (running jobs get up to
	// 10 s; the rest stay queued), then the app's context and the probes
	// end, then the rest above, last first.
	a.cleanups.AddFunc(func() { a.cancel(); a.stopProbes() })
	a.pool = a.jobPool(cfg)
	a.pool.Start(a.ctx)
	a.cleanups.AddFunc(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.pool.Stop(sctx)
	})
	go a.wakeLoop()
	a.startWebhooks()
	go a.resumeAgentTasks()
}

// resumeAgentTasks resumes following the A2A tasks of queued calls
// (a2a.Server.Start), in the background: the task store may be a Redis
// that is away, and a start does not wait for it (issue 36). It retries
// from 100 ms doubling to 5 s until the store answers or the app ends.
func (a *App) resumeAgentTasks() {
	wait := 100 * time.Millisecond
	for logged := false; ; logged = true {
		err := a.Agent.Start(a.ctx)
		if err == nil || a.ctx.Err() != nil {
			if err == nil && logged {
				a.log.Info("a2a: following the tasks of queued calls again")
			}
			return
		}
		if !logged {
			a.log.Warn("a2a: the tasks of queued calls are not followed yet; retrying", "err", err)
		}
		select {
		case <-a.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// storesConfig is where cfg puts state: the data folder, Redis and
// PostgreSQL (the table in internal/backend's doc).
func storesConfig(cfg *config.Config, log *slog.Logger) backend.Config {
	return backend.Config{Data: cfg.Data, Redis: cfg.Redis, RedisPrefix: cfg.RedisPrefix, Postgres: cfg.Postgres, Schema: cfg.Schema,
		Instances: cfg.Instances, FailOpen: cfg.FailOpen, TaskKeep: cfg.Jobs.ResultTTL.D(), Logger: log}
}

// followRegistry applies vendors registered on other instances sharing the
// registry (backend.Stores.RegistryChanges); a burst of changes is
// applied once.
func (a *App) followRegistry() {
	kick := make(chan struct{}, 1)
	go func() {
		_ = a.stores.RegistryChanges(a.ctx, func() {
			select {
			case kick <- struct{}{}:
			default:
			}
		})
	}()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-kick:
		}
		if err := a.applyStored(a.ctx); err != nil && a.ctx.Err() == nil {
			a.log.Error("applying a registry change from another instance failed", "err", err)
		}
	}
}

// Config returns the config in force.
func (a *App) Config() *config.Config { return a.cfg.Load() }

// Reload applies a new config without dropping in-flight calls: vendors
// whose spec did not change keep their connections. A config that does not
// validate, that changes a key a reload cannot apply ([ReloadableKeys]) or
// that drops every tenant is refused, and the old one keeps serving.
func (a *App) Reload(ctx context.Context, cfg *config.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	old := a.cfg.Load()
	if err := checkReload(old, cfg); err != nil {
		return err
	}
	if err := a.apply(ctx, cfg); err != nil {
		return err
	}
	// Validated above: neither fails on the lists themselves.
	if err := a.reloadOutbound(ctx, old, cfg); err != nil {
		return err
	}
	if err := a.Budgets.SetRules(cfg.Billing.Budgets); err != nil {
		return err
	}
	return a.seedBudgets(ctx) // a budget new to a tenant counts what it spent already
}

func (a *App) apply(ctx context.Context, cfg *config.Config) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	caps, err := cfg.RegistryCapabilities()
	if err != nil {
		return err
	}
	pv, err := newPrivacy(cfg)
	if err != nil {
		return err
	}
	if err := a.applyOAuth(cfg); err != nil {
		return err
	}
	a.privacy.Store(pv)
	vendorsList, err := a.vendors(ctx, cfg)
	if err != nil {
		return err
	}
	tenants := map[string]*registry.Tenant{}
	for i := range cfg.Tenants {
		tenants[cfg.Tenants[i].ID] = &cfg.Tenants[i]
	}
	specs := map[string]registry.Vendor{}
	for _, v := range vendorsList {
		specs[v.ID] = v
	}
	a.tenants.Store(&tenants)
	a.specs.Store(&specs)
	a.pinPolicy.Store(pinPolicies(cfg, vendorsList))
	for _, e := range a.Catalog.SetCapabilities(caps) {
		a.log.Error("capability refused", "err", e)
	}
	// Each manager takes its own kind of vendor and skips the other.
	if err := errors.Join(a.Manager.Sync(ctx, vendorsList), a.A2A.Sync(ctx, vendorsList)); err != nil {
		return err
	}
	a.cfg.Store(cfg)
	a.Cache.SetConfig(cfg.Cache)
	a.Router.SetConfig(cfg.Fallback)
	a.syncProbes(specs)
	return nil
}

// vendors merges the config's vendors with those registered at run time
// (the config wins for an id in both).
func (a *App) vendors(ctx context.Context, cfg *config.Config) ([]registry.Vendor, error) {
	out := append([]registry.Vendor(nil), cfg.Vendors...)
	seen := map[string]bool{}
	for _, v := range out {
		seen[v.ID] = true
	}
	recs, err := a.Store.ListVendors(ctx)
	if backend.IsAway(err) {
		// Started while PostgreSQL is away: the config's vendors serve, the
		// stored ones are applied when it is joined (followRegistry).
		a.log.Warn("vendors registered at run time are not applied until postgres is joined", "err", err)
		recs, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry store: %w", err)
	}
	for _, r := range recs {
		if seen[r.Vendor.ID] {
			continue
		}
		if err := stdioRefused(cfg, r.Vendor); err != nil {
			a.log.Error("a stored vendor is not started", "vendor", r.Vendor.ID, "err", err)
			continue
		}
		out = append(out, r.Vendor)
	}
	return out, nil
}

// upstream finds a vendor's invoker: MCP servers, then A2A agents.
func (a *App) upstream(vendor string) (hub.Invoker, bool) {
	if inv, ok := a.Manager.Upstream(vendor); ok {
		return inv, true
	}
	return a.A2A.Upstream(vendor)
}

func (a *App) spec(vendor string) (registry.Vendor, bool) {
	if m := a.specs.Load(); m != nil {
		v, ok := (*m)[vendor]
		return v, ok
	}
	return registry.Vendor{}, false
}

// plannerKeywords are the offline planner's words for a vendor tool, from
// its vendor's spec (keywords: {tool: [...]}).
func (a *App) plannerKeywords(e registry.Entry) []string {
	if e.Tool == nil {
		return nil
	}
	v, _ := a.spec(e.Tool.Vendor)
	return v.Keywords[e.Tool.Def.Name]
}

// timeout is a vendor tool's attempt timeout: its class's when the vendor
// puts it in one, else the vendor's (zero: the gateway's default).
func (a *App) timeout(t *registry.Tool) time.Duration {
	v, _ := a.spec(t.Vendor)
	if class, ok := v.Classes[t.Def.Name]; ok {
		g := a.cfg.Load().Governance
		return g.ClassTimeout(class)
	}
	return v.Timeout.D()
}

func (a *App) vendorLimits(vendor string) registry.Limits {
	v, _ := a.spec(vendor)
	return v.Limits
}

// VendorView is one vendor in GET /v1/vendors: its connection and its
// governance (breaker, ramp, limits and usage).
type VendorView struct {
	servers.VendorStatus
	A2A        *a2a.VendorStatus   `json:"a2a,omitempty"` // A2A vendors: card, agent, endpoint, streaming
	Governance govern.VendorStatus `json:"governance"`
}

// VendorViews lists the vendors p may see with their status: every
// vendor for an operator, its own for a vendor key.
func (a *App) VendorViews(p auth.Principal) []VendorView {
	sts := a.Manager.Statuses()
	out := make([]VendorView, 0, len(sts))
	for _, st := range sts {
		if p.Role == auth.RoleVendor && st.ID != p.Vendor {
			continue
		}
		out = append(out, VendorView{VendorStatus: st, Governance: a.Gov.Status(st.ID)})
	}
	for _, st := range a.A2A.Statuses() {
		if p.Role == auth.RoleVendor && st.ID != p.Vendor {
			continue
		}
		out = append(out, VendorView{
			VendorStatus: servers.VendorStatus{ID: st.ID, Transport: "a2a", State: servers.State(st.State), LastError: st.LastError,
				Tools: st.Tools, Protocol: st.Protocol, Server: st.Agent + " " + st.Version},
			A2A:        &st,
			Governance: a.Gov.Status(st.ID),
		})
	}
	slices.SortFunc(out, func(x, y VendorView) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// visible applies the tenants' tool lists. With no tenants configured every
// caller sees everything; otherwise an unknown tenant sees nothing.
func (a *App) visible(tenant string, e registry.Entry) bool {
	m := a.tenants.Load()
	if m == nil || len(*m) == 0 {
		return true
	}
	t, ok := (*m)[tenant]
	if !ok {
		return false
	}
	if e.Capability != nil {
		return t.Allows(e.Name, e.Capability.Name)
	}
	return t.Allows(e.Name)
}

// Serve listens on the config's address until ctx ends, then shuts down
// gracefully (in-flight calls get up to 10 s).
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	srv := a.API.HTTPServer() // connection timeouts; every request is bounded by the API's own layer
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// Close stops everything, in the reverse order of New: running jobs get up
// to 10 s to finish, the rest stay in the durable queue for the next start
// (or another instance); the meter writes what it holds (what cannot be
// written stays in the spill for the next start); then the stores close.
func (a *App) Close() {
	if err := a.cleanups.Close(); err != nil {
		a.log.Warn("closing toolhub", "err", err)
	}
}

// stopProbes stops every vendor's health probe.
func (a *App) stopProbes() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id := range a.probing {
		a.Gov.StopProbes(id)
	}
}

// reportScope restricts usage reports to what the caller may see.
func reportScope(r *http.Request) (tenant, vendor string, err error) {
	p := api.PrincipalFrom(r.Context())
	switch p.Role {
	case auth.RoleTenant:
		return p.Tenant, "", nil
	case auth.RoleVendor:
		return "", p.Vendor, nil
	}
	return "", "", nil
}

// goalRunner offers the planner as toolhub's A2A "plan and run a goal" skill.
type goalRunner struct{ a *App }

func (g goalRunner) RunGoal(ctx context.Context, tenant, goal string, progress func(string)) (string, any, error) {
	out, err := g.a.Planner.Run(ctx, tenant, orchestrator.Request{Goal: goal}, func(e orchestrator.Event) {
		switch e.Type {
		case "step_finished":
			progress(fmt.Sprintf("✓ %s (%s) %.0fms", e.Step, e.Tool, e.LatencyMS))
		case "step_failed":
			progress(fmt.Sprintf("✗ %s (%s): %s", e.Step, e.Tool, e.Message))
		}
	})
	if err != nil {
		return "", nil, err
	}
	return out.Answer, out, nil
}

// sessionMetrics counts the MCP front door's sessions in /metrics.
func (a *App) sessionMetrics() {
	stat := func(f func(api.SessionStats) float64) func() float64 {
		return func() float64 { return f(a.API.SessionStats()) }
	}
	const refused = "toolhub_mcp_sessions_refused_total"
	const refusedHelp = "MCP initialize requests refused: reason per_key (mcp.max_sessions_per_key) or total (mcp.max_sessions)."
	a.metrics.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolhub_mcp_sessions_open", Help: "MCP sessions open on this instance."},
			stat(func(s api.SessionStats) float64 { return float64(s.Open) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: refused, Help: refusedHelp, ConstLabels: prometheus.Labels{"reason": "per_key"}},
			stat(func(s api.SessionStats) float64 { return float64(s.RefusedPerKey) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: refused, Help: refusedHelp, ConstLabels: prometheus.Labels{"reason": "total"}},
			stat(func(s api.SessionStats) float64 { return float64(s.RefusedTotal) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "toolhub_mcp_sessions_expired_total", Help: "MCP sessions ended for being idle longer than mcp.session_idle_timeout."},
			stat(func(s api.SessionStats) float64 { return float64(s.Expired) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "toolhub_mcp_sessions_closed_total", Help: "MCP sessions their client ended (DELETE)."},
			stat(func(s api.SessionStats) float64 { return float64(s.ClientsEnded) })),
	)
}

// ready is /readyz's answer: not ready while a shared store is away when
// the config says require_stores (calls are served either way).
func (a *App) ready() error {
	if cfg := a.cfg.Load(); cfg == nil || !cfg.RequireStores {
		return nil
	}
	if err := a.stores.Health.Away(); err != nil {
		return fmt.Errorf("require_stores: %w", err)
	}
	return nil
}

// storeMetrics shows in /metrics whether each configured shared store
// answers and how long it has not since start.
func (a *App) storeMetrics() {
	for _, st := range a.stores.Health.States() {
		name := st.Store
		get := func() backend.StoreState {
			for _, s := range a.stores.Health.States() {
				if s.Store == name {
					return s
				}
			}
			return backend.StoreState{}
		}
		l := prometheus.Labels{"store": name}
		a.metrics.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolhub_store_up", ConstLabels: l,
				Help: "1 while the shared store (redis, postgres) answers, 0 while it is away (toolhub serves on local limits and the write-ahead log)."},
				func() float64 {
					if get().Up {
						return 1
					}
					return 0
				}),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "toolhub_store_degraded_seconds_total", ConstLabels: l,
				Help: "Seconds this instance has served without the shared store since it started."},
				func() float64 { return get().DegradedSeconds }),
		)
	}
}
