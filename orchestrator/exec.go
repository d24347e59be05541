package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/hub"
)

// Step outcomes.
const (
	StatusOK       = "ok"
	StatusFailed   = "failed"
	StatusCanceled = "canceled" // never ran, or cut off, because the plan stopped
)

// Event types reported to an [EventFunc].
const (
	EventPlan         = "plan"          // the plan about to run (Plan set)
	EventStepStarted  = "step_started"  // a step or model tool call started
	EventStepFinished = "step_finished" // it succeeded (LatencyMS set)
	EventStepFailed   = "step_failed"   // it failed for good (Error set)
	EventModel        = "model"         // the model answered a turn (Turn set)
)

// Event is a progress report.
type Event struct {
	Type      string     `json:"type"`
	PlanID    string     `json:"plan_id"`
	Step      string     `json:"step,omitempty"`
	Tool      string     `json:"tool,omitempty"`
	Attempt   int        `json:"attempt,omitempty"` // 1-based, on step events
	LatencyMS float64    `json:"latency_ms,omitempty"`
	Error     *ErrorBody `json:"error,omitempty"`
	Turn      int        `json:"turn,omitempty"`    // model turns so far
	Message   string     `json:"message,omitempty"` // a short human line
	Plan      *Plan      `json:"plan,omitempty"`
}

// EventFunc receives progress events. Calls are serialised: it need not be
// safe for concurrent use, but it should not block for long.
type EventFunc func(Event)

// ErrorBody is an error as the model and HTTP clients see it.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func errorBody(err error) *ErrorBody {
	if err == nil {
		return nil
	}
	e := hub.AsError(err)
	return &ErrorBody{Code: string(e.Code), Message: e.Message}
}

// StepResult is what one step produced.
type StepResult struct {
	ID         string          `json:"id"`
	Tool       string          `json:"tool"`
	Status     string          `json:"status"` // StatusOK, StatusFailed, StatusCanceled
	Structured any             `json:"structured,omitempty"`
	Text       string          `json:"text,omitempty"`
	Error      *ErrorBody      `json:"error,omitempty"`
	Attempts   int             `json:"attempts,omitempty"`
	LatencyMS  float64         `json:"latency_ms"`
	Provenance *hub.Provenance `json:"provenance,omitempty"`
}

// ErrPlanStopped is wrapped when a step with on_failure "stop" failed.
var ErrPlanStopped = errors.New("orchestrator: plan stopped")

// Executor runs plans over a gateway.
type Executor struct {
	Gateway Gateway
	// Parallel bounds the steps running at once; zero means 8.
	Parallel int
	// Backoff before a step's first retry, doubled per retry; zero means 100ms.
	Backoff time.Duration
	// Now is the clock for latencies; nil means time.Now.
	Now func() time.Time
}

// Run validates p for tenant and runs it: independent steps in parallel,
// each as a gateway call carrying p.ID as PlanID, under ctx's deadline. The
// returned results follow p.Steps' order. The error is nil when the plan ran
// to the end, even with degraded steps; it wraps [ErrInvalidPlan],
// [ErrPlanStopped] or ctx's error otherwise, and the results so far are
// still returned.
func (x *Executor) Run(ctx context.Context, tenant string, p *Plan, events EventFunc) ([]StepResult, error) {
	if p.ID == "" {
		p.ID = hub.NewCallID()
	}
	if err := p.Validate(tenant, x.Gateway.Lookup); err != nil {
		return nil, err
	}
	now := x.Now
	if now == nil {
		now = time.Now
	}
	parallel := x.Parallel
	if parallel <= 0 {
		parallel = 8
	}
	var emu sync.Mutex
	emit := func(e Event) {
		if events != nil {
			e.PlanID = p.ID
			emu.Lock()
			defer emu.Unlock()
			events(e)
		}
	}
	emit(Event{Type: EventPlan, Plan: p, Message: fmt.Sprintf("%d steps", len(p.Steps))})

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, parallel)
	done := make(map[string]chan struct{}, len(p.Steps))
	for _, s := range p.Steps {
		done[s.ID] = make(chan struct{})
	}
	var mu sync.Mutex
	results := make(map[string]*StepResult, len(p.Steps))
	var wg sync.WaitGroup
	for _, s := range p.Steps {
		wg.Go(func() {
			defer close(done[s.ID])
			res := &StepResult{ID: s.ID, Tool: s.Tool, Status: StatusCanceled}
			defer func() {
				mu.Lock()
				results[s.ID] = res
				mu.Unlock()
			}()
			for _, d := range s.DependsOn {
				select {
				case <-done[d]:
				case <-ctx.Done():
					res.Error = errorBody(context.Cause(ctx))
					return
				}
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				res.Error = errorBody(context.Cause(ctx))
				return
			}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				res.Error = errorBody(context.Cause(ctx))
				return
			}
			mu.Lock()
			deps := make(map[string]*StepResult, len(s.DependsOn))
			for _, d := range s.DependsOn {
				deps[d] = results[d]
			}
			mu.Unlock()
			x.runStep(ctx, tenant, p.ID, s, deps, res, now, emit)
			if res.Status == StatusFailed && s.OnFailure == Stop {
				cancel(fmt.Errorf("%w: step %q (%s) failed: %s", ErrPlanStopped, s.ID, s.Tool, res.Error.Message))
			}
		})
	}
	wg.Wait()
	out := make([]StepResult, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = *results[s.ID]
	}
	if err := context.Cause(ctx); err != nil {
		return out, err
	}
	return out, nil
}

// retryable says whether another attempt at a failed call may succeed.
func retryable(code hub.Code) bool {
	switch code {
	case hub.CodeTimeout, hub.CodeUnavailable, hub.CodeUpstream, hub.CodeRateLimited,
		hub.CodeOverloaded, hub.CodeCircuitOpen, hub.CodeInvalidOutput, hub.CodeToolError:
		return true
	}
	return false
}

func (x *Executor) runStep(ctx context.Context, tenant, planID string, s Step, deps map[string]*StepResult, res *StepResult, now func() time.Time, emit func(Event)) {
	start := now()
	if s.Tool == IntegrateTool {
		emit(Event{Type: EventStepStarted, Step: s.ID, Tool: s.Tool, Attempt: 1})
		res.Structured, res.Text = integrate(s.DependsOn, deps)
		res.Status, res.Attempts = StatusOK, 1
		res.LatencyMS = ms(now().Sub(start))
		emit(Event{Type: EventStepFinished, Step: s.ID, Tool: s.Tool, Attempt: 1, LatencyMS: res.LatencyMS})
		return
	}
	args := resolveArgs(s.Arguments, deps)
	backoff := x.Backoff
	if backoff <= 0 {
		backoff = 100 * time.Millisecond
	}
	for attempt := 1; ; attempt++ {
		res.Attempts = attempt
		emit(Event{Type: EventStepStarted, Step: s.ID, Tool: s.Tool, Attempt: attempt})
		t0 := now()
		r, err := x.call(ctx, s, &hub.Call{Tenant: tenant, Name: s.Tool, Arguments: cloneArgs(args), PlanID: planID})
		lat := ms(now().Sub(t0))
		if err == nil {
			res.Status, res.Error = StatusOK, nil
			res.Structured, res.Text = normalize(r.Structured), hub.TextOf(r)
			prov := r.Provenance
			res.Provenance = &prov
			res.LatencyMS = ms(now().Sub(start))
			emit(Event{Type: EventStepFinished, Step: s.ID, Tool: s.Tool, Attempt: attempt, LatencyMS: lat})
			return
		}
		res.Status, res.Error = StatusFailed, errorBody(err)
		res.LatencyMS = ms(now().Sub(start))
		if attempt > s.Retries || !retryable(hub.Code(res.Error.Code)) || ctx.Err() != nil {
			if ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrPlanStopped) {
				res.Status = StatusCanceled
			}
			emit(Event{Type: EventStepFailed, Step: s.ID, Tool: s.Tool, Attempt: attempt, LatencyMS: lat, Error: res.Error})
			return
		}
		emit(Event{Type: EventStepFailed, Step: s.ID, Tool: s.Tool, Attempt: attempt, LatencyMS: lat, Error: res.Error,
			Message: fmt.Sprintf("retrying (%d of %d)", attempt, s.Retries)})
		t := time.NewTimer(backoff << min(attempt-1, 4))
		select {
		case <-ctx.Done():
			t.Stop()
			emit(Event{Type: EventStepFailed, Step: s.ID, Tool: s.Tool, Attempt: attempt, Error: errorBody(context.Cause(ctx))})
			return
		case <-t.C:
		}
	}
}

// call makes one attempt under the step's timeout. A result the tool marked
// as an error is a failure with code [hub.CodeToolError].
func (x *Executor) call(ctx context.Context, s Step, c *hub.Call) (*hub.Result, error) {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(s.Timeout))
		defer cancel()
	}
	r, err := x.Gateway.Call(ctx, c)
	if err != nil {
		return nil, err
	}
	if r.IsError {
		msg := hub.TextOf(r)
		if msg == "" {
			msg = "the tool reported an error"
		}
		return nil, &hub.Error{Code: hub.CodeToolError, Message: msg, Vendor: r.Provenance.Vendor}
	}
	return r, nil
}

// integrate merges dependency results: structured is {step id: structured
// result or null}, text is one line per dependency.
func integrate(ids []string, deps map[string]*StepResult) (any, string) {
	merged := make(map[string]any, len(ids))
	var b strings.Builder
	for _, id := range ids {
		d := deps[id]
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch {
		case d == nil || d.Status != StatusOK:
			merged[id] = nil
			why := "not run"
			if d != nil && d.Error != nil {
				why = d.Error.Code + ": " + d.Error.Message
			}
			fmt.Fprintf(&b, "%s: unavailable (%s)", id, why)
		default:
			merged[id] = d.Structured
			txt := d.Text
			if txt == "" && d.Structured != nil {
				j, _ := json.Marshal(d.Structured)
				txt = string(j)
			}
			fmt.Fprintf(&b, "%s: %s", id, txt)
		}
	}
	return merged, b.String()
}

// normalize turns structured content into plain JSON values (maps, slices)
// so references can walk it.
func normalize(v any) any {
	switch v.(type) {
	case nil, map[string]any, []any, string, float64, bool:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

func cloneArgs(a map[string]any) map[string]any {
	if a == nil {
		return nil
	}
	return maps.Clone(a)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
