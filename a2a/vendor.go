package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/vendorconn"
	"github.com/toolhub/toolhub/registry"
)

// vendor is one A2A agent: its card, its client, its refresh loop. It is
// the vendor's hub.Invoker.
type vendor struct {
	m   *Manager
	id  string
	log *slog.Logger

	ctx    context.Context // ends when the vendor is stopped
	cancel context.CancelFunc
	done   chan struct{} // closed when the refresh loop has ended

	refreshMu sync.Mutex // one card fetch at a time

	// The spec's headers (nil: none) and the clients that send them; a
	// header that could not be expanded (hdrErr) fails every fetch.
	hdr                *vendorHeaders
	hdrErr             error
	cardHTTP, callHTTP *http.Client

	mu        sync.Mutex
	spec      registry.Vendor
	state     string
	since     time.Time
	card      *sdk.AgentCard
	cardJSON  []byte
	iface     *sdk.AgentInterface
	client    *a2aclient.Client
	tools     int
	rejected  []string
	lastErr   string
	fetched   time.Time
	nextRetry time.Time
}

var _ hub.Invoker = (*vendor)(nil)

func newVendor(m *Manager, spec registry.Vendor) *vendor {
	ctx, cancel := context.WithCancel(context.Background())
	v := &vendor{m: m, id: spec.ID, spec: spec, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		log: m.opts.Logger.With("vendor", spec.ID), state: StateConnecting, since: m.opts.Now()}
	if spec.Disabled {
		v.state = StateDisabled
	}
	v.cardHTTP, v.callHTTP = m.cardHTTP, m.callHTTP
	v.hdr, v.hdrErr = expandHeaders(spec.A2A, m.opts.LookupEnv)
	if v.hdr != nil {
		ht := v.hdr.transport(m.base)
		v.cardHTTP = vendorconn.Client(m.cardHTTP, ht)
		v.callHTTP = vendorconn.Client(m.callHTTP, &statusTransport{base: ht, now: m.opts.Now})
	}
	return v
}

// Start runs the refresh loop (not for a disabled vendor).
func (v *vendor) Start() {
	if v.spec.Disabled {
		close(v.done)
		return
	}
	go v.loop()
}

// Stop ends the refresh loop and destroys the client, at once with drain
// or without: an A2A vendor holds no connection of its own (the manager's
// HTTP transport is shared), so there is nothing to drain.
func (v *vendor) Stop(drain bool) {
	v.cancel()
	<-v.done
	v.mu.Lock()
	c := v.client
	v.client = nil
	v.mu.Unlock()
	if c != nil {
		_ = c.Destroy()
	}
}

// loop fetches the card, then again every RefreshInterval; a failed fetch
// is retried with jittered exponential backoff.
func (v *vendor) loop() {
	defer close(v.done)
	o := v.m.opts
	b := vendorconn.Backoff{Min: o.RetryMin, Max: o.RetryMax}
	fails := 0 // failed fetches in a row
	for {
		var next time.Duration
		if err := v.refresh(v.ctx); err != nil {
			if v.ctx.Err() != nil {
				return
			}
			next = b.Delay(fails)
			fails++
			if v.hasCard() && o.RefreshInterval > 0 {
				next = min(next, o.RefreshInterval)
			}
		} else {
			fails = 0
			if o.RefreshInterval < 0 {
				<-v.ctx.Done()
				return
			}
			next = o.RefreshInterval
		}
		v.mu.Lock()
		v.nextRetry = o.Now().Add(next)
		v.mu.Unlock()
		if !vendorconn.Sleep(v.ctx, next) {
			return
		}
	}
}

func (v *vendor) hasCard() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.card != nil
}

// refresh fetches the card and, when it changed, rebuilds the client and
// the vendor's tools. A failed fetch keeps a card fetched before (and its
// tools): the agent may only have lost its card for a moment.
func (v *vendor) refresh(ctx context.Context) error {
	v.refreshMu.Lock()
	defer v.refreshMu.Unlock()
	o := v.m.opts
	v.mu.Lock()
	cardURL := v.spec.A2A.Card
	disabled := v.spec.Disabled
	v.mu.Unlock()
	if disabled {
		return nil
	}
	if v.hdrErr != nil {
		err := &CardError{URL: cardURL, Err: v.hdrErr}
		v.fail(err)
		return err
	}
	fctx, cancel := context.WithTimeout(ctx, o.CardTimeout)
	card, err := FetchCard(fctx, v.cardHTTP, cardURL)
	cancel()
	if err != nil {
		v.fail(err)
		return err
	}
	raw, _ := json.Marshal(card)
	v.mu.Lock()
	same := v.card != nil && string(raw) == string(v.cardJSON)
	if same {
		v.fetched, v.lastErr = o.Now(), ""
		v.setState(StateReady)
		v.mu.Unlock()
		v.changed()
		return nil
	}
	v.mu.Unlock()

	iface := *pickInterface(card)
	if iface.ProtocolVersion == "" {
		iface.ProtocolVersion = sdk.Version
	}
	use := *card
	use.SupportedInterfaces = []*sdk.AgentInterface{&iface}
	v.hdr.allow(iface.URL)
	client, err := newClient(ctx, v.callHTTP, &use)
	if err != nil {
		err = &CardError{URL: cardURL, Err: fmt.Errorf("no client for interface %s %s %s: %w", iface.ProtocolBinding, iface.ProtocolVersion, iface.URL, err)}
		v.fail(err)
		return err
	}
	rejectedErrs, ok := v.m.setTools(v, SkillTools(card))
	if !ok {
		_ = client.Destroy()
		return ctx.Err()
	}
	var rejected []string
	for _, e := range rejectedErrs {
		rejected = append(rejected, e.Error())
		v.log.Warn("a2a skill left out of the catalog", "error", e)
	}
	v.mu.Lock()
	// Calls in flight finish on the old client; it holds nothing to close
	// (the manager's HTTP transport is shared).
	v.card, v.cardJSON, v.iface, v.client = card, raw, &iface, client
	v.tools = len(card.Skills) - len(rejectedErrs)
	v.rejected = rejected
	v.fetched, v.lastErr = o.Now(), ""
	v.setState(StateReady)
	v.mu.Unlock()
	v.log.Info("a2a agent card loaded", "agent", card.Name, "skills", len(card.Skills), "protocol", iface.ProtocolVersion, "streaming", card.Capabilities.Streaming)
	v.changed()
	return nil
}

func (v *vendor) fail(err error) {
	msg := v.hdr.redact(err.Error())
	v.mu.Lock()
	v.lastErr = msg
	if v.card == nil {
		v.setState(StateUnavailable)
	}
	v.mu.Unlock()
	v.log.Warn("a2a agent card fetch failed", "error", msg)
	v.changed()
}

// setState changes the state; v.mu must be held.
func (v *vendor) setState(s string) {
	if v.state != s {
		v.state, v.since = s, v.m.opts.Now()
	}
}

func (v *vendor) changed() {
	if f := v.m.opts.OnChange; f != nil {
		f(v.Status())
	}
}

// Status is the vendor's status now.
func (v *vendor) Status() VendorStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	st := VendorStatus{ID: v.id, Kind: registry.KindA2A, State: v.state, Card: v.spec.A2A.Card, Tools: v.tools,
		Rejected: v.rejected, LastError: v.lastErr, Fetched: v.fetched, Since: v.since}
	if v.card != nil {
		st.Agent, st.Version, st.Streaming = v.card.Name, v.card.Version, v.card.Capabilities.Streaming
	}
	if v.iface != nil {
		st.Protocol, st.Endpoint = string(v.iface.ProtocolVersion), v.iface.URL
	}
	return st
}

// Retired is closed once the refresh loop has ended; Stop returns after
// that, with the client destroyed.
func (v *vendor) Retired() <-chan struct{} { return v.done }

// Spec returns a copy of the vendor's spec.
func (v *vendor) Spec() registry.Vendor {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.spec.Clone()
}

// newClient builds an a2a-go client for the card's (one) interface: A2A
// 1.0 over JSON-RPC or HTTP+JSON, or 0.3 through a2acompat/a2av0. The 1.0
// client sends A2A-Version: 1.0 on every call.
func newClient(ctx context.Context, hc *http.Client, card *sdk.AgentCard) (*a2aclient.Client, error) {
	f := a2aclient.NewFactory(
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []sdk.TransportProtocol{sdk.TransportProtocolJSONRPC, sdk.TransportProtocolHTTPJSON}}),
		a2aclient.WithJSONRPCTransport(hc),
		a2aclient.WithRESTTransport(hc),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}),
		a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: hc}),
	)
	return f.CreateFromCard(ctx, card)
}

// Invoke runs the call's skill as an A2A task: it sends the message
// (SendStreamingMessage when the card says the agent streams, else a
// blocking SendMessage), follows the task to a terminal state (polling
// GetTask if the stream breaks or the agent answers early), and maps its
// artifacts to MCP content. When ctx ends while the task runs, the task is
// canceled at the agent (CancelTask) in the background.
func (v *vendor) Invoke(ctx context.Context, c *hub.Call) (*hub.Result, error) {
	res, err := v.invoke(ctx, c)
	if he := (*hub.Error)(nil); v.hdr != nil && errors.As(err, &he) {
		he.Message = v.hdr.redact(he.Message)
	}
	return res, err
}

func (v *vendor) invoke(ctx context.Context, c *hub.Call) (*hub.Result, error) {
	v.mu.Lock()
	client, card, state, lastErr, next := v.client, v.card, v.state, v.lastErr, v.nextRetry
	v.mu.Unlock()
	if state == StateDisabled {
		return nil, &hub.Error{Code: hub.CodeUnavailable, Vendor: v.id, Message: fmt.Sprintf("vendor %q is disabled", v.id)}
	}
	if client == nil {
		e := &hub.Error{Code: hub.CodeUnavailable, Vendor: v.id, Message: fmt.Sprintf("vendor %q is not ready: %s", v.id, orText(lastErr, "agent card not fetched yet")),
			HubState: state == StateConnecting && lastErr == ""} // the first card fetch: the hub's own state

		if d := next.Sub(v.m.opts.Now()); d > 0 {
			e.RetryAfter = d
		}
		return nil, e
	}
	if c.Tool == nil {
		return nil, &hub.Error{Code: hub.CodeInternal, Vendor: v.id, Message: "a2a: call has no tool"}
	}
	msg, err := messageFor(c.Tool.Def.Name, c.Arguments)
	if err != nil {
		return nil, &hub.Error{Code: hub.CodeInvalidArguments, Vendor: v.id, Message: err.Error()}
	}
	run := &taskRun{v: v, client: client, skill: c.Tool.Def.Name, contextID: msg.ContextID}
	if card.Capabilities.Streaming {
		return run.stream(ctx, msg)
	}
	return run.poll(ctx, msg)
}

// messageFor builds the user message for a skill from tool arguments
// {"text": …, "data": {…}}; the skill goes in metadata.skill.
func messageFor(skill string, args map[string]any) (*sdk.Message, error) {
	var parts []*sdk.Part
	if t, ok := args["text"]; ok {
		s, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("argument text must be a string, not %T", t)
		}
		parts = append(parts, &sdk.Part{Content: sdk.Text(s), MediaType: "text/plain"})
	}
	if d, ok := args["data"]; ok && d != nil {
		parts = append(parts, &sdk.Part{Content: sdk.Data{Value: d}, MediaType: "application/json"})
	}
	if len(parts) == 0 {
		parts = append(parts, &sdk.Part{Content: sdk.Text(""), MediaType: "text/plain"})
	}
	msg := sdk.NewMessage(sdk.MessageRoleUser, parts...)
	msg.ContextID = sdk.NewContextID()
	msg.Metadata = map[string]any{"skill": skill}
	return msg, nil
}

// taskRun follows one task.
type taskRun struct {
	v      *vendor
	client *a2aclient.Client
	skill  string

	contextID string // client-chosen, to find the task before its id is known
	taskID    sdk.TaskID
	state     sdk.TaskState
	status    *sdk.Message
	artifacts []*sdk.Artifact
	byID      map[sdk.ArtifactID]*sdk.Artifact
}

func (r *taskRun) stream(ctx context.Context, msg *sdk.Message) (*hub.Result, error) {
	var streamErr error
	for ev, err := range r.client.SendStreamingMessage(ctx, &sdk.SendMessageRequest{Message: msg}) {
		if err != nil {
			streamErr = err
			break
		}
		if m, ok := ev.(*sdk.Message); ok {
			return resultFromParts(m.Parts), nil
		}
		r.apply(ev)
		if r.done() {
			break
		}
	}
	if ctx.Err() != nil {
		r.cancelLater(ctx)
		return nil, ctx.Err()
	}
	if streamErr != nil && r.taskID == "" {
		return nil, classify(ctx, r.v.id, streamErr)
	}
	if !r.done() {
		if r.taskID == "" {
			return nil, &hub.Error{Code: hub.CodeUpstream, Vendor: r.v.id, Message: fmt.Sprintf("vendor %q: skill %q: the stream ended without a task or a message", r.v.id, r.skill)}
		}
		// The stream broke or ended early: follow the task by polling.
		if err := r.follow(ctx); err != nil {
			return nil, err
		}
	}
	return r.result(ctx)
}

func (r *taskRun) poll(ctx context.Context, msg *sdk.Message) (*hub.Result, error) {
	// Blocking: most agents answer the finished task in one round trip.
	// Should ctx end first, the task is found by its context id and
	// canceled.
	res, err := r.client.SendMessage(ctx, &sdk.SendMessageRequest{Message: msg})
	if err != nil {
		if ctx.Err() != nil {
			r.cancelLater(ctx)
			return nil, ctx.Err()
		}
		return nil, classify(ctx, r.v.id, err)
	}
	switch res := res.(type) {
	case *sdk.Message:
		return resultFromParts(res.Parts), nil
	case *sdk.Task:
		r.apply(res)
	default:
		return nil, &hub.Error{Code: hub.CodeUpstream, Vendor: r.v.id, Message: fmt.Sprintf("vendor %q: SendMessage returned %T", r.v.id, res)}
	}
	if err := r.follow(ctx); err != nil { // an agent that answered before the end
		return nil, err
	}
	return r.result(ctx)
}

// follow polls GetTask until the task is done.
func (r *taskRun) follow(ctx context.Context) error {
	wait := 20 * time.Millisecond
	for !r.done() {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			r.cancelLater(ctx)
			return ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, r.v.m.opts.PollInterval)
		task, err := r.client.GetTask(ctx, &sdk.GetTaskRequest{ID: r.taskID})
		if err != nil {
			if ctx.Err() != nil {
				r.cancelLater(ctx)
				return ctx.Err()
			}
			return classify(ctx, r.v.id, err)
		}
		r.apply(task)
	}
	return nil
}

func (r *taskRun) apply(ev sdk.Event) {
	if r.byID == nil {
		r.byID = map[sdk.ArtifactID]*sdk.Artifact{}
	}
	switch e := ev.(type) {
	case *sdk.Task:
		r.taskID = e.ID
		r.state, r.status = e.Status.State, e.Status.Message
		if len(e.Artifacts) > 0 || r.done() {
			r.artifacts, r.byID = nil, map[sdk.ArtifactID]*sdk.Artifact{}
			for _, a := range e.Artifacts {
				cp := *a
				r.artifacts = append(r.artifacts, &cp)
				r.byID[a.ID] = &cp
			}
		}
	case *sdk.TaskStatusUpdateEvent:
		if r.taskID == "" {
			r.taskID = e.TaskID
		}
		r.state, r.status = e.Status.State, e.Status.Message
	case *sdk.TaskArtifactUpdateEvent:
		if r.taskID == "" {
			r.taskID = e.TaskID
		}
		if e.Artifact == nil {
			return
		}
		if a, ok := r.byID[e.Artifact.ID]; ok {
			if e.Append {
				a.Parts = append(a.Parts, e.Artifact.Parts...)
			} else {
				*a = *e.Artifact
			}
			return
		}
		cp := *e.Artifact
		r.artifacts = append(r.artifacts, &cp)
		r.byID[cp.ID] = &cp
	}
}

// done: the task reached a state toolhub does not wait beyond.
func (r *taskRun) done() bool {
	return r.state.Terminal() || r.state == sdk.TaskStateInputRequired || r.state == sdk.TaskStateAuthRequired
}

func (r *taskRun) result(ctx context.Context) (*hub.Result, error) {
	switch r.state {
	case sdk.TaskStateCompleted:
		var parts []*sdk.Part
		for _, a := range r.artifacts {
			parts = append(parts, a.Parts...)
		}
		if len(parts) == 0 && r.status != nil {
			parts = r.status.Parts
		}
		return resultFromParts(parts), nil
	case sdk.TaskStateInputRequired, sdk.TaskStateAuthRequired:
		r.cancelLater(ctx)
		return nil, &hub.Error{Code: hub.CodeUpstream, Vendor: r.v.id, Message: fmt.Sprintf("vendor %q: skill %q: task %s asks for more (%s: %s); toolhub calls are one-shot, so the task was canceled",
			r.v.id, r.skill, r.taskID, stateName(r.state), orText(textOf(r.status), "no message"))}
	case sdk.TaskStateRejected:
		// The agent declined the task: its definitive answer to this
		// message, a final tool error (no retry, no other vendor, no job
		// retrying it), passed on to the caller as final.
		return &hub.Result{IsError: true, Final: true, Content: []mcp.Content{mcp.NewTextContent(fmt.Sprintf("agent %q rejected the task: %s", r.v.id, orText(textOf(r.status), "no reason given")))}}, nil
	default:
		return nil, &hub.Error{Code: hub.CodeUpstream, Vendor: r.v.id, Message: fmt.Sprintf("vendor %q: skill %q: task %s %s: %s",
			r.v.id, r.skill, r.taskID, stateName(r.state), orText(textOf(r.status), "no message")),
			Details: map[string]any{"task_id": string(r.taskID), "state": string(r.state)}}
	}
}

// cancelLater cancels the task at the agent, in the background, bounded
// by Options.CancelTimeout. A task whose id is not known yet (ctx ended
// before the agent answered) is found with ListTasks by the message's
// context id.
func (r *taskRun) cancelLater(ctx context.Context) {
	if r.state.Terminal() {
		return
	}
	id, contextID, client, v := r.taskID, r.contextID, r.client, r.v
	if id == "" && contextID == "" {
		return
	}
	v.m.set.Go(func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), v.m.opts.CancelTimeout)
		defer cancel()
		ids := []sdk.TaskID{id}
		if id == "" {
			list, err := client.ListTasks(cctx, &sdk.ListTasksRequest{ContextID: contextID})
			if err != nil {
				v.log.Warn("a2a ListTasks to cancel a task failed", "context", contextID, "error", v.hdr.redact(err.Error()))
				return
			}
			ids = ids[:0]
			for _, t := range list.Tasks {
				if t.ContextID == contextID && !t.Status.State.Terminal() {
					ids = append(ids, t.ID)
				}
			}
		}
		for _, id := range ids {
			if _, err := client.CancelTask(cctx, &sdk.CancelTaskRequest{ID: id}); err != nil && !errors.Is(err, sdk.ErrTaskNotCancelable) {
				v.log.Warn("a2a CancelTask failed", "task", id, "error", v.hdr.redact(err.Error()))
				continue
			}
			v.log.Debug("a2a task canceled", "task", id)
		}
	})
}

func stateName(s sdk.TaskState) string {
	switch s {
	case sdk.TaskStateFailed:
		return "failed"
	case sdk.TaskStateCanceled:
		return "was canceled by the agent"
	case sdk.TaskStateRejected:
		return "was rejected"
	case sdk.TaskStateInputRequired:
		return "input required"
	case sdk.TaskStateAuthRequired:
		return "auth required"
	}
	return "ended in state " + s.String()
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
