package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// Planning modes of a [Request].
const (
	ModeAuto  = "auto"  // the LLM tool loop when a model is configured, else rules
	ModeRules = "rules" // the offline planner (configured rules, then the catalog), run as a DAG
	ModeLLM   = "llm"   // the LLM tool loop
	ModePlan  = "plan"  // ask the LLM for an explicit JSON plan, then run it as a DAG
)

// Request asks the planner to reach a goal.
type Request struct {
	Goal     string `json:"goal"`
	Mode     string `json:"mode,omitempty"`      // ModeAuto when empty
	MaxSteps int    `json:"max_steps,omitempty"` // model turns (llm) or plan steps (plan); zero means the planner's default
}

// Outcome is what a planner run produced.
type Outcome struct {
	PlanID string       `json:"plan_id"`
	Goal   string       `json:"goal"`
	Mode   string       `json:"mode"`   // the mode that ran: rules, llm or plan
	Status string       `json:"status"` // ok, degraded (some step failed), partial (some clauses not planned), no_match or failed
	Answer string       `json:"answer"` // the model's final answer, or the integrate step's summary
	Plan   *Plan        `json:"plan,omitempty"`
	Steps  []StepResult `json:"steps"`
	Turns  int          `json:"turns,omitempty"` // model turns (llm, plan)
	Error  *ErrorBody   `json:"error,omitempty"` // why it failed
	// Unplanned lists the clauses of the goal the offline planner did not
	// turn into steps, and why (with the closest tools as suggestions).
	Unplanned []Unplanned `json:"unplanned,omitempty"`
	// Note says why the mode that ran is not the one asked for (the model
	// failed and the offline planner answered), or why the outcome was cut.
	Note string `json:"note,omitempty"`
	// Truncated says step results and the answer were cut to keep the
	// outcome within [Planner].MaxAnswerBytes.
	Truncated bool `json:"truncated,omitempty"`
}

// Statuses of an [Outcome] besides the step statuses.
const (
	StatusDegraded = "degraded" // some step failed
	StatusPartial  = "partial"  // some clauses of the goal were not planned (see Unplanned)
	StatusNoMatch  = "no_match" // nothing in the catalog fits the goal
)

// Planner turns goals into gateway calls: an LLM tool loop, an LLM-written
// plan, or the offline rule planner; plans run as DAGs by an [Executor].
type Planner struct {
	Gateway Gateway
	// Catalog lists the tools offered to the model; required for llm and plan.
	Catalog *registry.Catalog
	// Model; nil means no LLM (auto uses the rules).
	Model Model
	// Rules are tried first by the offline planner; a goal they do not
	// match is planned from the catalog. See [DefaultRules].
	Rules Rules
	// Keywords returns the configured planner keywords of a vendor tool
	// (capabilities carry their own); nil means none.
	Keywords func(registry.Entry) []string
	// MaxSteps is the default step budget: model turns, or plan steps; zero means 8.
	MaxSteps int
	// Timeout is the time budget of one run; zero means 2 minutes.
	Timeout time.Duration
	// MaxTools offers the model only the N tools most relevant to the goal;
	// zero offers all.
	MaxTools int
	// Parallel bounds concurrent tool calls; zero means 8.
	Parallel int
	// Backoff before a plan step's first retry; zero means 100ms.
	Backoff time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// MaxGoalBytes bounds a goal's length in bytes (UTF-8: a Chinese
	// character is 3); zero means 8192. A longer goal is refused with
	// too_large before anything is planned.
	MaxGoalBytes int
	// MaxGoalClauses bounds the clauses of a goal (the things it asks for,
	// split at "and", "then", commas, "然后" …); zero means 16. A goal with
	// more is refused with too_large.
	MaxGoalClauses int
	// MaxAnswerBytes bounds an outcome's JSON: over it, step results and
	// the answer are cut and Outcome.Truncated is set; zero means 1 MiB.
	MaxAnswerBytes int
	// MaxConcurrentPerTenant bounds the runs of one tenant at once; zero
	// means 4. One more is refused with rate_limited.
	MaxConcurrentPerTenant int

	once    sync.Once
	initErr error
	rules   *compiledRules
	off     offline
	search  searchState // Search's view of the index (search.go)

	runMu   sync.Mutex
	running map[string]int // tenant → runs in progress (no entry for none)
}

// Defaults of the planner's bounds.
const (
	DefaultMaxGoalBytes           = 8 << 10
	DefaultMaxGoalClauses         = 16
	DefaultMaxAnswerBytes         = 1 << 20
	DefaultMaxConcurrentPerTenant = 4
)

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Init checks the configuration and fills in defaults. [New] calls it; Run
// calls it once, before its first run, if it was not called. Do not change
// the fields once runs have started.
func (p *Planner) Init() error {
	if p.Gateway == nil {
		return errors.New("orchestrator: planner: Gateway is required")
	}
	r, err := compileRules(p.Rules)
	if err != nil {
		return err
	}
	p.rules = r
	if p.MaxSteps <= 0 {
		p.MaxSteps = 8
	}
	if p.Timeout <= 0 {
		p.Timeout = 2 * time.Minute
	}
	if p.Parallel <= 0 {
		p.Parallel = 8
	}
	p.MaxGoalBytes = orDefault(p.MaxGoalBytes, DefaultMaxGoalBytes)
	p.MaxGoalClauses = orDefault(p.MaxGoalClauses, DefaultMaxGoalClauses)
	p.MaxAnswerBytes = orDefault(p.MaxAnswerBytes, DefaultMaxAnswerBytes)
	p.MaxConcurrentPerTenant = orDefault(p.MaxConcurrentPerTenant, DefaultMaxConcurrentPerTenant)
	return nil
}

// ErrNoModel is wrapped when a mode needs an LLM and none is configured.
var ErrNoModel = errors.New("orchestrator: no LLM configured")

func (p *Planner) visibility() Visibility {
	if v, ok := p.Gateway.(Visibility); ok {
		return v
	}
	return nil
}

func (p *Planner) executor() *Executor {
	return &Executor{Gateway: p.Gateway, Parallel: p.Parallel, Backoff: p.Backoff, Now: p.Now}
}

// Run reaches req.Goal for tenant, reporting progress to events (may be
// nil). The outcome is returned even with an error, saying what ran. A
// request over the planner's bounds (MaxGoalBytes, MaxGoalClauses,
// MaxConcurrentPerTenant) is refused with a nil outcome and a
// [*hub.Error] (too_large, rate_limited) before anything runs.
func (p *Planner) Run(ctx context.Context, tenant string, req Request, events EventFunc) (*Outcome, error) {
	release, err := p.admit(tenant, req)
	if err != nil {
		return nil, err
	}
	defer release()
	return p.run(ctx, tenant, req, events)
}

func (p *Planner) init() error {
	p.once.Do(func() {
		if p.rules == nil {
			p.initErr = p.Init()
		}
	})
	return p.initErr
}

// admit checks req against the planner's bounds and takes one of tenant's
// run slots; release gives it back.
func (p *Planner) admit(tenant string, req Request) (release func(), err error) {
	if err := p.init(); err != nil {
		return nil, err
	}
	if n := len(req.Goal); n > p.MaxGoalBytes {
		return nil, hub.Errorf(hub.CodeTooLarge, "the goal is %d bytes, over planner.max_goal_bytes (%d); shorten it, or split it into several plans", n, p.MaxGoalBytes)
	}
	if n := p.countClauses(req.Goal); n > p.MaxGoalClauses {
		return nil, tooManyClauses(n, p.MaxGoalClauses)
	}
	p.runMu.Lock()
	defer p.runMu.Unlock()
	if p.running == nil {
		p.running = map[string]int{}
	}
	if n := p.running[tenant]; n >= p.MaxConcurrentPerTenant {
		return nil, &hub.Error{Code: hub.CodeRateLimited, RetryAfter: time.Second,
			Message: fmt.Sprintf("tenant %q already runs %d plans, the most planner.max_concurrent_per_tenant allows; wait for one to finish, then retry", tenant, n)}
	}
	p.running[tenant]++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.runMu.Lock()
			defer p.runMu.Unlock()
			if p.running[tenant]--; p.running[tenant] <= 0 {
				delete(p.running, tenant)
			}
		})
	}, nil
}

func tooManyClauses(n, max int) *hub.Error {
	return hub.Errorf(hub.CodeTooLarge, "the goal asks for %d things (clauses split at \"and\", \"then\", commas …), over planner.max_goal_clauses (%d); split it into several plans", n, max)
}

// run is Run once admitted.
func (p *Planner) run(ctx context.Context, tenant string, req Request, events EventFunc) (*Outcome, error) {
	out, err := p.runUnbounded(ctx, tenant, req, events)
	p.bound(out)
	return out, err
}

func (p *Planner) runUnbounded(ctx context.Context, tenant string, req Request, events EventFunc) (*Outcome, error) {
	out := &Outcome{PlanID: hub.NewCallID(), Goal: req.Goal, Mode: req.Mode, Steps: []StepResult{}}
	if strings.TrimSpace(req.Goal) == "" {
		return out, fail(out, hub.Errorf(hub.CodeInvalidRequest, "goal is empty; say what you want, e.g. \"weather in Paris\""))
	}
	switch out.Mode {
	case "", ModeAuto:
		out.Mode = ModeRules
		if p.Model != nil {
			out.Mode = ModeLLM
		}
	case ModeRules, ModeLLM, ModePlan:
		if out.Mode != ModeRules && p.Model == nil {
			return out, fail(out, hub.Errorf(hub.CodeInvalidRequest, "mode %q: %w; use mode rules, or configure planner.llm", out.Mode, ErrNoModel))
		}
	default:
		return out, fail(out, hub.Errorf(hub.CodeInvalidRequest, "mode %q: want auto, rules, llm or plan", req.Mode))
	}
	maxSteps := req.MaxSteps
	if maxSteps <= 0 {
		maxSteps = p.MaxSteps
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	var mu = make(chan struct{}, 1)
	emit := func(e Event) {
		if events == nil {
			return
		}
		mu <- struct{}{}
		defer func() { <-mu }()
		e.PlanID = out.PlanID
		events(e)
	}
	var err error
	switch out.Mode {
	case ModeLLM:
		err = p.loop(ctx, tenant, out.PlanID, req.Goal, maxSteps, out, emit)
		if err != nil && (req.Mode == "" || req.Mode == ModeAuto) && len(out.Steps) == 0 && modelFailed(err) && ctx.Err() == nil {
			// The model is down: the offline planner answers instead.
			out.Note = "the model failed (" + err.Error() + "); planned offline from the catalog"
			out.Mode, out.Turns = ModeRules, 0
			err = p.runOffline(ctx, tenant, req.Goal, out, emit)
		}
	case ModeRules:
		err = p.runOffline(ctx, tenant, req.Goal, out, emit)
	case ModePlan:
		var plan *Plan
		if plan, err = p.askPlan(ctx, tenant, req.Goal, maxSteps, out); err == nil {
			err = p.runPlan(ctx, tenant, plan, out, emit)
		}
	}
	if err != nil {
		var nm errNoMatch
		if errors.As(err, &nm) {
			return out, nm.error
		}
		return out, fail(out, err)
	}
	out.Status = StatusOK
	for _, s := range out.Steps {
		if s.Status != StatusOK {
			out.Status = StatusDegraded
		}
	}
	if len(out.Unplanned) > 0 {
		out.Status = StatusPartial
	}
	return out, nil
}

// modelFailed says whether err means the model is down: a 429 or 5xx
// after the client's retries, a network error, an answer that is not one.
// A refusal that retrying cannot fix (a bad key, an unknown model) is
// reported instead, so the operator sees it.
func modelFailed(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	return strings.HasPrefix(err.Error(), "orchestrator: llm")
}

// runOffline plans goal with the configured rules, or else from the
// catalog, and runs the plan. Clauses it could not plan are reported in
// out.Unplanned and in the answer; when none could be planned it fails
// with invalid_request and status no_match.
func (p *Planner) runOffline(ctx context.Context, tenant, goal string, out *Outcome, emit EventFunc) error {
	plan, rerr := p.rules.plan(goal)
	if rerr != nil {
		plan, out.Unplanned = p.PlanOffline(tenant, goal)
	}
	if len(plan.Steps) == 0 {
		var msg strings.Builder
		msg.WriteString("could not plan any part of the goal")
		for _, u := range out.Unplanned {
			fmt.Fprintf(&msg, "; %q: %s", u.Clause, u.Message)
		}
		if len(out.Unplanned) == 0 {
			msg.WriteString(" (say what you want, e.g. \"weather in Paris\"; or configure an LLM for free-form goals)")
		}
		out.Answer = msg.String()
		err := hub.Errorf(hub.CodeInvalidRequest, "%w: %s", ErrNoIntent, msg.String())
		fail(out, err)
		out.Status = StatusNoMatch
		return errNoMatch{err}
	}
	err := p.runPlan(ctx, tenant, plan, out, emit)
	if len(out.Unplanned) > 0 {
		var b strings.Builder
		b.WriteString(out.Answer)
		for _, u := range out.Unplanned {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "not done: %q: %s", u.Clause, u.Message)
		}
		out.Answer = b.String()
	}
	return err
}

// errNoMatch carries a no_match outcome through Run, which keeps its status.
type errNoMatch struct{ error }

func (e errNoMatch) Unwrap() error { return e.error }

func fail(out *Outcome, err error) error {
	out.Status = StatusFailed
	out.Error = errorBody(err)
	if out.Error.Code == string(hub.CodeInternal) {
		// Budget and model errors keep their words but get a useful code.
		switch {
		case errors.Is(err, ErrTimeBudget), errors.Is(err, context.DeadlineExceeded):
			out.Error.Code = string(hub.CodeTimeout)
		case errors.Is(err, ErrStepBudget):
			out.Error.Code = string(hub.CodeBudgetExceeded)
		case errors.Is(err, ErrInvalidPlan):
			out.Error.Code = string(hub.CodeInvalidRequest)
		case errors.Is(err, ErrPlanStopped):
			out.Error.Code = string(hub.CodeUnavailable)
		default:
			var ae *APIError
			if errors.As(err, &ae) || strings.HasPrefix(err.Error(), "orchestrator: llm") {
				out.Error.Code = string(hub.CodeUpstream)
			}
		}
	}
	return err
}

func (p *Planner) runPlan(ctx context.Context, tenant string, plan *Plan, out *Outcome, emit EventFunc) error {
	plan.ID = out.PlanID
	out.Plan = plan
	res, err := p.executor().Run(ctx, tenant, plan, emit)
	out.Steps = append(out.Steps, res...)
	for _, r := range res {
		if r.Tool == IntegrateTool && r.Status == StatusOK {
			out.Answer = r.Text
		}
	}
	if out.Answer == "" && len(res) == 1 && res[0].Status == StatusOK {
		out.Answer = res[0].Text
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: the plan did not finish in time: %w", ErrTimeBudget, err)
	}
	return err
}

// PlanPrompt asks the model for an explicit plan.
const PlanPrompt = `You are toolhub's planner. Write a plan that reaches the user's goal with the tools you are given, ` +
	`as one JSON object and nothing else: {"steps": [{"id": "weather", "tool": "<tool name>", "arguments": {...}, "depends_on": ["<step id>"]}]}. ` +
	`Steps without dependencies run in parallel. A string argument may be exactly "{{steps.<id>.structured.<field>}}" to use a field of a step it depends on. ` +
	`End with {"id": "integrate", "tool": "integrate", "depends_on": [...]} to merge results. Use at most %d steps.`

// askPlan asks the model for a JSON plan (response_format json_object,
// retried without it when the server refuses it) and validates it.
func (p *Planner) askPlan(ctx context.Context, tenant, goal string, maxSteps int, out *Outcome) (*Plan, error) {
	tools := p.functions(tenant, goal)
	var spec strings.Builder
	for _, t := range tools {
		fmt.Fprintf(&spec, "- %s: %s; parameters %s\n", t.Function.Name, t.Function.Description, t.Function.Parameters)
	}
	req := &ChatRequest{
		Messages: []Message{
			{Role: "system", Content: fmt.Sprintf(PlanPrompt, maxSteps) + "\nTools:\n" + spec.String()},
			{Role: "user", Content: goal},
		},
		ResponseFormat: &ResponseFormat{Type: "json_object"},
	}
	var lastErr error
	for attempt := 1; attempt <= 2; attempt++ {
		resp, err := p.Model.Chat(ctx, req)
		var ae *APIError
		if err != nil && req.ResponseFormat != nil && errors.As(err, &ae) && ae.Status == 400 && strings.Contains(strings.ToLower(ae.Message), "response_format") {
			req.ResponseFormat = nil // the server does not support it: ask in words only
			resp, err = p.Model.Chat(ctx, req)
		}
		if err != nil {
			return nil, err
		}
		out.Turns++
		msg := resp.Choices[0].Message
		plan, err := decodePlan(msg.Content)
		if err == nil {
			if len(plan.Steps) > maxSteps {
				err = fmt.Errorf("%w: %d steps, over the budget of %d", ErrInvalidPlan, len(plan.Steps), maxSteps)
			} else {
				err = plan.Validate(tenant, p.Gateway.Lookup)
			}
		}
		if err == nil {
			plan.Goal = goal
			return plan, nil
		}
		// Tell the model what was wrong once, then give up.
		lastErr = err
		req.Messages = append(req.Messages, Message{Role: "assistant", Content: msg.Content},
			Message{Role: "user", Content: "That plan is not valid: " + err.Error() + ". Answer with the corrected JSON plan only."})
	}
	return nil, fmt.Errorf("the model wrote no valid plan: %w", lastErr)
}

// decodePlan reads a plan from a model's reply, tolerating a fenced code block.
func decodePlan(s string) (*Plan, error) {
	s = strings.TrimSpace(s)
	if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
		s = s[i : j+1]
	}
	var plan Plan
	if err := json.Unmarshal([]byte(s), &plan); err != nil {
		return nil, fmt.Errorf("%w: the reply is not a JSON plan: %v", ErrInvalidPlan, err)
	}
	return &plan, nil
}
