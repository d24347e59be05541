package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/toolhub/toolhub/a2a/internal/taskrow"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/registry"
)

// Paths the [Server] serves.
const (
	CardPath = WellKnownCardPath // the agent card
	RPCPath  = "/a2a"            // JSON-RPC: SendMessage, SendStreamingMessage, GetTask, …
)

// TaskStore keeps the tasks of toolhub's A2A endpoint. It is the a2a-go
// server's store interface, so any of its implementations fit: the
// default is in memory; a2a/sqlitetasks and a2a/redistasks keep tasks
// where the jobs are.
type TaskStore = taskstore.Store

// ServerOptions configure a [Server]. A nil *ServerOptions, and every zero
// field, means the default.
type ServerOptions struct {
	// URL is the public base URL of toolhub ("https://hub.example.com");
	// the card's interface is URL + RPCPath. Empty means the scheme and
	// host of each card request.
	URL string
	// Name, Description and Version go on the card; zero means "toolhub",
	// a generic description and "dev".
	Name, Description, Version string
	// Provider goes on the card; nil means none.
	Provider *sdk.AgentProvider
	// SecuritySchemes and SecurityRequirements go on the card, so that
	// clients know how to authenticate (e.g. a bearer scheme when the
	// front door authenticates tenants). Authentication itself is the
	// front door's: the server only reads the tenant through Tenant.
	SecuritySchemes      sdk.NamedSecuritySchemes
	SecurityRequirements sdk.SecurityRequirementsOptions
	// Tenant returns the tenant of a request from its context (the api
	// package's api.TenantFrom); nil means every request is "default".
	// Tasks are listed per tenant.
	Tenant func(ctx context.Context) string
	// VendorTools also lists every vendor tool as a skill, after the
	// capabilities; false lists capabilities only. Either way any catalog
	// name the tenant can see may be called.
	VendorTools bool
	// TaskStore keeps tasks; nil means in memory (lost on restart). Use
	// a2a/sqlitetasks (embedded, in the job database) or
	// a2a/redistasks (shared by instances) to keep them. Either way
	// a tenant sees and lists its own tasks only.
	TaskStore TaskStore
	// PushNotifications enables the push-notification config methods with
	// the SDK's HTTP sender. Off by default: the sender POSTs to any URL a
	// client gives, so turn it on only where outbound requests are allowed.
	PushNotifications bool
	// PushConfigStore keeps push-notification configs; nil means in
	// memory. The SQLite and Redis task stores give one (PushConfigs).
	PushConfigStore PushConfigStore
	// PushClient sends the push notifications, each retried with backoff
	// (give the outbound guard's client); nil means the SDK's own sender.
	PushClient *http.Client
	// PushCheckURL, if set, vets a push config's URL when it is set (the
	// outbound guard's CheckURL): a refused URL is an invalid-params error.
	PushCheckURL func(ctx context.Context, rawURL string) error
	// Jobs is the job queue that takes calls no vendor can answer now (the
	// fallback chain's queue step). With it, a call answered "queued" is a
	// task that stays working and follows its job to completed, failed or
	// canceled (CancelTask cancels a job that has not started); nil means
	// such a task completes at once with the "queued" answer.
	Jobs *jobs.Queue
	// JobPoll is how often the job event feed is read for changes made by
	// other instances; zero means 1 s.
	JobPoll time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Planner, when set, adds the skill PlanSkill ("plan and run a goal"):
	// a text part (or a data part {"goal": …}) is the goal; progress lines
	// become working status updates, the outcome the artifact.
	Planner GoalRunner
}

// Server is toolhub as an A2A agent: its card lists the catalog's
// capabilities as skills, and its JSON-RPC endpoint runs a message as a
// call through the gateway, as a task (submitted → working → completed or
// failed). Mount it with [Server.Routes].
type Server struct {
	gw      *hub.Gateway
	cat     *registry.Catalog
	opts    ServerOptions
	handler a2asrv.RequestHandler
	rpc     http.Handler

	store  *tenantStore
	push   PushConfigStore // nil without PushNotifications
	sender push.Sender

	ctx        context.Context // ends at Close, or when Start's context ends
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	followOnce sync.Once

	mu        sync.Mutex
	closed    bool // set by Close: no follower starts after it
	running   map[sdk.TaskID]context.CancelFunc
	watchers  map[string][]chan struct{} // job id → tasks following it
	canceling map[string]int             // job id → CancelTasks canceling it
}

// NewServer returns toolhub's A2A agent over gw and its catalog cat.
func NewServer(gw *hub.Gateway, cat *registry.Catalog, opts *ServerOptions) *Server {
	s := &Server{gw: gw, cat: cat, running: map[sdk.TaskID]context.CancelFunc{},
		watchers: map[string][]chan struct{}{}, canceling: map[string]int{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.JobPoll <= 0 {
		s.opts.JobPoll = time.Second
	}
	if s.opts.Name == "" {
		s.opts.Name = "toolhub"
	}
	if s.opts.Description == "" {
		s.opts.Description = "toolhub: a governed hub for third-party AI tools. Each skill is a capability; send its arguments as a data part."
	}
	if s.opts.Version == "" {
		s.opts.Version = "dev"
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.Default()
	}
	if s.opts.Tenant == nil {
		s.opts.Tenant = func(context.Context) string { return "default" }
	}
	store := s.opts.TaskStore
	if store == nil {
		store = taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
			Authenticator: func(ctx context.Context) (string, error) { return storeTenant(ctx), nil },
		})
	}
	s.store = &tenantStore{inner: store, tenant: s.tenantOf}
	hopts := []a2asrv.RequestHandlerOption{a2asrv.WithTaskStore(s.store), a2asrv.WithLogger(s.opts.Logger)}
	if s.opts.PushNotifications {
		ps := s.opts.PushConfigStore
		if ps == nil {
			ps = push.NewInMemoryStore()
		}
		if s.opts.PushCheckURL != nil {
			ps = guardedPushStore{ConfigStore: ps, check: s.opts.PushCheckURL}
		}
		s.push, s.sender = &tenantPushStore{inner: ps, tasks: s.store}, push.NewHTTPPushSender(nil)
		if s.opts.PushClient != nil {
			s.sender = &pushSender{client: s.opts.PushClient, attempts: 4, log: s.opts.Logger}
		}
		hopts = append(hopts, a2asrv.WithPushNotifications(s.push, s.sender))
	}
	if len(s.opts.SecuritySchemes) > 0 {
		// The public card lists what an anonymous caller may use; a caller
		// with a key asks for its own (the authenticated extended card).
		hopts = append(hopts, a2asrv.WithExtendedAgentCardProducer(a2asrv.ExtendedAgentCardProducerFn(
			func(ctx context.Context, _ *sdk.GetExtendedAgentCardRequest) (*sdk.AgentCard, error) {
				base, _ := ctx.Value(baseKey{}).(string)
				return s.Card(ctx, base), nil
			})))
	}
	s.handler = jobHandler{a2asrv.NewHandler(&executor{s: s}, hopts...), s}
	v1, v0 := a2asrv.NewJSONRPCHandler(s.handler), a2av0.NewJSONRPCHandler(s.handler)
	s.rpc = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), baseKey{}, s.base(r)))
		// A request without A2A-Version is 0.3 (A2A 1.0, "service parameters").
		if v := r.Header.Get(sdk.SvcParamVersion); v == "" || strings.HasPrefix(v, "0.") {
			v0.ServeHTTP(w, r)
			return
		}
		v1.ServeHTTP(w, r)
	})
	return s
}

// Routes mounts the card at CardPath and the JSON-RPC endpoint at RPCPath.
// To guard the endpoint (the card is public), mount [Server.CardHandler]
// and [Server.Handler] yourself.
func (s *Server) Routes(mux *http.ServeMux) {
	mux.Handle("GET "+CardPath, s.CardHandler())
	mux.Handle(RPCPath, s.rpc)
}

// CardHandler serves the agent card (GET).
func (s *Server) CardHandler() http.Handler { return http.HandlerFunc(s.serveCard) }

// Handler returns the JSON-RPC endpoint alone: A2A 1.0, and 0.3 for a
// request that says A2A-Version 0.3 or none.
func (s *Server) Handler() http.Handler { return s.rpc }

// baseKey carries toolhub's base URL, as a request reached it, to the
// extended card's producer.
type baseKey struct{}

// base is toolhub's public base URL: Options.URL, else the request's.
func (s *Server) base(r *http.Request) string {
	base := strings.TrimSuffix(s.opts.URL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return base
}

func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	card := s.Card(r.Context(), s.base(r))
	var b []byte
	var err error
	if v := r.Header.Get(sdk.SvcParamVersion); strings.HasPrefix(v, "0.") {
		// A 0.3 client that says so gets the card in 0.3 shape.
		p := a2av0.NewAgentCardProducer(a2asrv.AgentCardProducerFn(func(context.Context) (*sdk.AgentCard, error) { return card, nil }))
		b, err = p.(a2asrv.AgentCardJSONProducer).CardJSON(r.Context())
	} else {
		b, err = v1CardWith03Fields(card)
	}
	if err != nil {
		httperr.Write(w, r, err, "") // internal: logged, not shown
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(b)
}

// v1CardWith03Fields is the 1.0 card plus the top-level fields a 0.3
// client looks for (url, protocolVersion, preferredTransport), so that
// clients of both revisions find the endpoint. Security schemes stay in
// 1.0 shape; a 0.3 client that sends A2A-Version: 0.3 gets them in its own.
func v1CardWith03Fields(card *sdk.AgentCard) ([]byte, error) {
	b, err := json.Marshal(card)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["url"] = card.SupportedInterfaces[0].URL
	m["protocolVersion"] = string(a2av0.Version)
	m["preferredTransport"] = string(sdk.TransportProtocolJSONRPC)
	return json.Marshal(m)
}

// Card returns the agent card as the request's tenant sees the catalog
// (every capability it may call is a skill); base is toolhub's public base
// URL. With security schemes the card says it has an authenticated
// extended card: the caller's own, served by the JSON-RPC endpoint
// (GetExtendedAgentCard; 0.3: agent/getAuthenticatedExtendedCard).
func (s *Server) Card(ctx context.Context, base string) *sdk.AgentCard {
	tenant := s.opts.Tenant(ctx)
	card := &sdk.AgentCard{
		Name:        s.opts.Name,
		Description: s.opts.Description,
		Version:     s.opts.Version,
		Provider:    s.opts.Provider,
		SupportedInterfaces: []*sdk.AgentInterface{
			sdk.NewAgentInterface(base+RPCPath, sdk.TransportProtocolJSONRPC),
			{URL: base + RPCPath, ProtocolBinding: sdk.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		},
		Capabilities:         sdk.AgentCapabilities{Streaming: true, PushNotifications: s.opts.PushNotifications, ExtendedAgentCard: len(s.opts.SecuritySchemes) > 0},
		DefaultInputModes:    []string{"application/json", "text/plain"},
		DefaultOutputModes:   []string{"application/json", "text/plain"},
		SecuritySchemes:      s.opts.SecuritySchemes,
		SecurityRequirements: s.opts.SecurityRequirements,
		Skills:               []sdk.AgentSkill{},
	}
	for _, c := range s.cat.Capabilities() {
		e := registry.Entry{Name: c.CatalogName(), Capability: c}
		if !s.gw.Visible(tenant, e) {
			continue
		}
		card.Skills = append(card.Skills, sdk.AgentSkill{
			ID: c.Name, Name: c.Name, Description: skillDescription(c.Description, c.InputSchema),
			Tags: []string{"capability"}, InputModes: []string{"application/json"}, OutputModes: []string{"application/json", "text/plain"},
		})
	}
	if s.opts.Planner != nil {
		card.Skills = append(card.Skills, sdk.AgentSkill{
			ID: PlanSkill, Name: "Plan and run a goal",
			Description: "Turns a goal in plain words (a text part) into governed tool calls run as a plan, e.g. \"plan a trip from Paris to Lyon: weather, route and restaurants\".",
			Tags:        []string{"planner"}, InputModes: []string{"text/plain"}, OutputModes: []string{"text/plain", "application/json"},
		})
	}
	if s.opts.VendorTools {
		for _, t := range s.cat.Tools() {
			e := registry.Entry{Name: t.Catalog, Tool: t}
			if !s.gw.Visible(tenant, e) {
				continue
			}
			card.Skills = append(card.Skills, sdk.AgentSkill{
				ID: t.Catalog, Name: orText(t.Def.Title, t.Catalog), Description: skillDescription(t.Def.Description, t.Def.InputSchema),
				Tags: []string{"vendor:" + t.Vendor}, InputModes: []string{"application/json"}, OutputModes: []string{"application/json", "text/plain"},
			})
		}
	}
	return card
}

// PlanSkill is the skill id of the planner, when there is one.
const PlanSkill = "toolhub.plan"

// GoalRunner runs a goal for a tenant (the planner, adapted by the app):
// progress gets one human line per step; it returns the answer and a
// JSON-able outcome.
type GoalRunner interface {
	RunGoal(ctx context.Context, tenant, goal string, progress func(line string)) (answer string, outcome any, err error)
}

// skillDescription appends the input schema, since A2A skills have no
// field for one.
func skillDescription(desc string, schema json.RawMessage) string {
	if len(schema) == 0 {
		return desc
	}
	return strings.TrimSpace(desc + "\n\nArguments (a data part): " + string(schema))
}

// executor runs A2A messages as gateway calls.
type executor struct{ s *Server }

var _ a2asrv.AgentExecutor = (*executor)(nil)

// Execute picks the capability (metadata.skill, else the first data
// part's "tool" field), takes the arguments from the first data part (its
// "arguments" field when it names the tool, else the part without "tool";
// a text part that is a JSON object also works) and runs the call.
func (e *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		s := e.s
		tenant := s.tenantOf(ctx)
		if skill, _ := ec.Message.Metadata["skill"].(string); skill == PlanSkill && s.opts.Planner != nil {
			e.runGoal(ctx, ec, tenant, yield)
			return
		}
		if s.opts.Planner != nil && plainText(ec) {
			// A generic A2A client says what it wants in words: the
			// planner turns it into calls.
			e.runGoal(ctx, ec, tenant, yield)
			return
		}
		name, args, err := callOf(ec)
		if err == nil {
			err = s.gw.Precheck(tenant, name, args)
		}
		if err != nil {
			yield(nil, toA2AError(err))
			return
		}
		cctx, done, ok := e.start(ctx, ec, yield)
		if !ok {
			return
		}
		defer done()
		res, err := s.gw.Call(cctx, &hub.Call{Tenant: tenant, Name: name, Arguments: args})
		if cctx.Err() != nil && ctx.Err() == nil {
			return // canceled through CancelTask, which reports the state
		}
		if err != nil {
			yield(failed(ctx, ec, err), nil)
			return
		}
		if res.Provenance.Queued && res.Provenance.JobID != "" && s.opts.Jobs != nil {
			e.followJob(cctx, ec, res, yield)
			return
		}
		art := sdk.NewArtifactEvent(ec, partsFromResult(res)...)
		art.Artifact.Name = "result"
		art.Artifact.Metadata = resultMetadata(res)
		if res.IsError {
			art.Artifact.Metadata["toolhub/is_error"] = true
		}
		if !yield(art, nil) {
			return
		}
		state := sdk.TaskStateCompleted
		if res.IsError {
			state = sdk.TaskStateFailed
		}
		yield(sdk.NewStatusUpdateEvent(ec, state, nil), nil)
	}
}

// start reports the task submitted (unless it is stored already) and
// working, and gives the context it runs under, which Cancel stops until
// done is called. ok is false when the client has gone.
func (e *executor) start(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(sdk.Event, error) bool) (cctx context.Context, done func(), ok bool) {
	if ec.StoredTask == nil {
		if !yield(sdk.NewSubmittedTask(ec, ec.Message), nil) {
			return nil, nil, false
		}
	}
	if !yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateWorking, nil), nil) {
		return nil, nil, false
	}
	s := e.s
	cctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.running[ec.TaskID] = cancel
	s.mu.Unlock()
	return cctx, func() {
		s.mu.Lock()
		delete(s.running, ec.TaskID)
		s.mu.Unlock()
		cancel()
	}, true
}

// failed is the event of a task that failed with err: its typed error as
// text and, in the metadata, as JSON.
func failed(ctx context.Context, ec *a2asrv.ExecutorContext, err error) sdk.Event {
	b := httperr.BodyOf(ctx, err, "")
	msg := sdk.NewMessageForTask(sdk.MessageRoleAgent, ec, sdk.NewTextPart(string(b.Code)+": "+b.Message))
	msg.Metadata = map[string]any{"toolhub/error": errorJSON(b)}
	return sdk.NewStatusUpdateEvent(ec, sdk.TaskStateFailed, msg)
}

// runGoal runs the planner skill as a task: working updates per step, the
// answer and the outcome as the artifact.
func (e *executor) runGoal(ctx context.Context, ec *a2asrv.ExecutorContext, tenant string, yield func(sdk.Event, error) bool) {
	s := e.s
	goal := strings.TrimSpace(textOf(ec.Message))
	for _, p := range ec.Message.Parts {
		if d, ok := p.Content.(sdk.Data); ok {
			if m, ok := d.Value.(map[string]any); ok {
				if g, ok := m["goal"].(string); ok {
					goal = g
				}
			}
		}
	}
	if goal == "" {
		yield(nil, sdk.NewError(sdk.ErrInvalidParams, "say the goal in a text part (or a data part {\"goal\": …})"))
		return
	}
	cctx, done, ok := e.start(ctx, ec, yield)
	if !ok {
		return
	}
	defer done()
	stopped := false
	answer, outcome, err := s.opts.Planner.RunGoal(cctx, tenant, goal, func(line string) {
		if !stopped && !yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateWorking, sdk.NewMessageForTask(sdk.MessageRoleAgent, ec, sdk.NewTextPart(line))), nil) {
			stopped = true
		}
	})
	if stopped || cctx.Err() != nil && ctx.Err() == nil {
		return
	}
	if err != nil {
		yield(failed(ctx, ec, err), nil)
		return
	}
	art := sdk.NewArtifactEvent(ec, sdk.NewTextPart(answer), sdk.NewDataPart(plainJSON(outcome)))
	art.Artifact.Name = "plan"
	if !yield(art, nil) {
		return
	}
	yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateCompleted, nil), nil)
}

// Cancel stops the task's gateway call and reports the task canceled. A
// task that follows a job cancels the job first; a job that already runs
// cannot be canceled (task not cancelable).
func (e *executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		var jobID string
		if ec.StoredTask != nil && e.s.opts.Jobs != nil {
			jobID, _ = ec.StoredTask.Metadata[jobIDKey].(string)
			if jobID != "" {
				if err := e.cancelJob(ctx, jobID); err != nil {
					yield(nil, err)
					return
				}
			}
		}
		e.s.mu.Lock()
		cancel := e.s.running[ec.TaskID]
		if cancel != nil {
			cancel() // with the lock: a task following the job sees this or the mark
		}
		if jobID != "" {
			e.s.unmarkCanceling(jobID)
		}
		e.s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateCanceled, nil), nil)
	}
}

// plainText reports whether a message names no skill and carries only
// text that is not a JSON object of arguments.
func plainText(ec *a2asrv.ExecutorContext) bool {
	msg := ec.Message
	if msg == nil {
		return false
	}
	if s, _ := msg.Metadata["skill"].(string); s != "" {
		return false
	}
	if s, _ := ec.Metadata["skill"].(string); s != "" {
		return false
	}
	for _, p := range msg.Parts {
		if _, ok := p.Content.(sdk.Data); ok {
			return false
		}
	}
	t := strings.TrimSpace(textOf(msg))
	return t != "" && !strings.HasPrefix(t, "{")
}

func callOf(ec *a2asrv.ExecutorContext) (string, map[string]any, error) {
	msg := ec.Message
	if msg == nil {
		return "", nil, sdk.NewError(sdk.ErrInvalidParams, "no message")
	}
	name, _ := msg.Metadata["skill"].(string)
	if name == "" {
		name, _ = ec.Metadata["skill"].(string)
	}
	var args map[string]any
	for _, p := range msg.Parts {
		if d, ok := p.Content.(sdk.Data); ok {
			m, ok := d.Value.(map[string]any)
			if !ok {
				return "", nil, sdk.NewError(sdk.ErrInvalidParams, "the data part must be a JSON object of arguments")
			}
			if tool, ok := m["tool"].(string); ok && tool != "" {
				if name == "" {
					name = tool
				}
				if a, ok := m["arguments"].(map[string]any); ok {
					args = a
				} else {
					args = make(map[string]any, len(m))
					for k, v := range m {
						if k != "tool" {
							args[k] = v
						}
					}
				}
			} else {
				args = m
			}
			break
		}
	}
	if args == nil {
		if t := strings.TrimSpace(textOf(msg)); strings.HasPrefix(t, "{") {
			_ = json.Unmarshal([]byte(t), &args)
		}
	}
	if name == "" {
		return "", nil, sdk.NewError(sdk.ErrInvalidParams, `say which capability to call: message metadata {"skill": NAME}, or a data part {"tool": NAME, "arguments": {…}}; the agent card lists the skills`)
	}
	if args == nil {
		args = map[string]any{}
	}
	return name, args, nil
}

// toA2AError maps a gateway refusal before the task starts to an A2A
// error: the JSON-RPC code of its hub code (httperr.RPCCode: invalid
// params for an unknown capability or bad arguments), except that A2A's
// own codes answer unauthenticated and forbidden; the details carry the
// error body under "toolhub/error", as MCP's JSON-RPC data does.
func toA2AError(err error) error {
	if ae := (*sdk.Error)(nil); errors.As(err, &ae) {
		return ae
	}
	b := httperr.BodyOf(context.Background(), err, "")
	base := sdk.ErrInternalError
	switch b.Code {
	case hub.CodeUnauthenticated:
		base = sdk.ErrUnauthenticated
	case hub.CodeForbidden:
		base = sdk.ErrUnauthorized
	default:
		switch httperr.RPCCode(b.Code) {
		case httperr.RPCInvalidParams:
			base = sdk.ErrInvalidParams
		case httperr.RPCInvalidRequest:
			base = sdk.ErrInvalidRequest
		}
	}
	return sdk.NewError(base, string(b.Code)+": "+b.Message).WithDetails(map[string]any{"toolhub/error": errorJSON(b)})
}

func errorJSON(b httperr.Body) map[string]any {
	m := map[string]any{"code": string(b.Code), "message": b.Message}
	if b.Vendor != "" {
		m["vendor"] = b.Vendor
	}
	if b.RetryAfterMS > 0 {
		m["retry_after_ms"] = b.RetryAfterMS
	}
	if b.Details != nil {
		m["details"] = b.Details
	}
	if b.RequestID != "" {
		m["request_id"] = b.RequestID
	}
	return plainJSON(m).(map[string]any)
}

// plainJSON turns v into maps, slices and scalars (the task store copies
// tasks with encoding/gob, which knows no toolhub types).
// resultMetadata is a result's metadata on a message or artifact: its
// provenance, and the findings of its vendor's result scan when there are
// any (the result is not changed).
func resultMetadata(res *hub.Result) map[string]any {
	m := map[string]any{"toolhub/provenance": plainJSON(res.Provenance)}
	if len(res.Findings) > 0 {
		m["toolhub/findings"] = plainJSON(res.Findings)
	}
	return m
}

func plainJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// tenantOf is the tenant of a call: the one the server put in the context
// itself (following a stored task's job), else ServerOptions.Tenant's.
func (s *Server) tenantOf(ctx context.Context) string {
	if t, ok := taskrow.TenantIn(ctx); ok {
		return t
	}
	return s.opts.Tenant(ctx)
}

// tenantKey is the task metadata key naming the tenant that owns a task.
const tenantKey = "toolhub/tenant"

// tenantStore keeps each tenant to its own tasks, whatever the store
// behind: a task is stamped with its tenant when created, and another
// tenant's task is not found (GetTask, CancelTask, SubscribeToTask) nor
// listed.
type tenantStore struct {
	inner  TaskStore
	tenant func(context.Context) string
}

func (s *tenantStore) Create(ctx context.Context, t *sdk.Task) (taskstore.TaskVersion, error) {
	tenant := s.tenant(ctx)
	if _, ok := t.Metadata[tenantKey]; !ok {
		t.SetMeta(tenantKey, tenant)
	}
	return s.inner.Create(withStoreTenant(ctx, tenant), t)
}

func (s *tenantStore) Update(ctx context.Context, u *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	if u.Task != nil && u.PrevTask != nil {
		if owner, ok := u.PrevTask.Metadata[tenantKey]; ok {
			if _, has := u.Task.Metadata[tenantKey]; !has {
				u.Task.SetMeta(tenantKey, owner)
			}
		}
	}
	return s.inner.Update(withStoreTenant(ctx, s.tenant(ctx)), u)
}

func (s *tenantStore) Get(ctx context.Context, id sdk.TaskID) (*taskstore.StoredTask, error) {
	st, err := s.inner.Get(withStoreTenant(ctx, s.tenant(ctx)), id)
	if err != nil {
		return nil, err
	}
	if !s.owns(ctx, st.Task) {
		return nil, sdk.ErrTaskNotFound
	}
	return st, nil
}

func (s *tenantStore) List(ctx context.Context, req *sdk.ListTasksRequest) (*sdk.ListTasksResponse, error) {
	resp, err := s.inner.List(withStoreTenant(ctx, s.tenant(ctx)), req)
	if err != nil {
		return nil, err
	}
	kept := resp.Tasks[:0]
	for _, t := range resp.Tasks {
		if s.owns(ctx, t) {
			kept = append(kept, t)
		}
	}
	resp.TotalSize -= len(resp.Tasks) - len(kept)
	resp.Tasks = kept
	return resp, nil
}

func (s *tenantStore) owns(ctx context.Context, t *sdk.Task) bool {
	owner, ok := t.Metadata[tenantKey]
	return !ok || owner == s.tenant(ctx)
}
