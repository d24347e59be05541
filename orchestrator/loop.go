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
)

// Budget errors of the tool loop; the returned error wraps one of them and
// says which budget ran out.
var (
	ErrStepBudget = errors.New("orchestrator: step budget exhausted")
	ErrTimeBudget = errors.New("orchestrator: time budget exhausted")
)

// maxToolResult bounds a tool result sent back to the model.
const maxToolResult = 16 << 10

// SystemPrompt starts every tool-loop conversation.
const SystemPrompt = `You are toolhub's planner. Reach the user's goal by calling the tools you are given; ` +
	`call independent tools in the same turn, they run in parallel. ` +
	`A tool result of the form {"error": {"code", "message"}} is a failure: fix the arguments or try another tool. ` +
	`When you have what you need, answer the user in a few sentences without calling tools.`

// loop runs the model/tool conversation for goal.
func (p *Planner) loop(ctx context.Context, tenant, planID, goal string, maxSteps int, out *Outcome, emit EventFunc) error {
	tools := p.functions(tenant, goal)
	msgs := []Message{{Role: "system", Content: SystemPrompt}, {Role: "user", Content: goal}}
	var lastCalls string
	repeats := 0
	for turn := 1; turn <= maxSteps; turn++ {
		resp, err := p.Model.Chat(ctx, &ChatRequest{Messages: msgs, Tools: tools})
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%w after %d model turns: %v", ErrTimeBudget, turn-1, err)
			}
			return err
		}
		out.Turns = turn
		ch := resp.Choices[0]
		msg := ch.Message
		msg.Role = "assistant"
		emit(Event{Type: EventModel, Turn: turn, Message: fmt.Sprintf("%d tool calls, finish_reason %s", len(msg.ToolCalls), ch.FinishReason)})
		if len(msg.ToolCalls) == 0 {
			switch ch.FinishReason {
			case "length":
				return fmt.Errorf("orchestrator: the model's answer was cut off (finish_reason length) at turn %d", turn)
			case "content_filter":
				return fmt.Errorf("orchestrator: the model's answer was filtered (finish_reason content_filter) at turn %d", turn)
			}
			out.Answer = msg.Content
			return nil
		}
		// A model that asks for the same calls turn after turn is stuck:
		// stop it before the step budget pays for more of the same.
		if sig := callsSignature(msg.ToolCalls); sig == lastCalls {
			if repeats++; repeats >= maxRepeats {
				return fmt.Errorf("%w: the model asked for the same tool calls %d turns in a row (%s); stopped", ErrStepBudget, repeats, callNames(msg.ToolCalls))
			}
		} else {
			lastCalls, repeats = sig, 1
		}
		msgs = append(msgs, msg)
		replies := make([]Message, len(msg.ToolCalls))
		results := make([]StepResult, len(msg.ToolCalls))
		var wg sync.WaitGroup
		sem := make(chan struct{}, max(p.Parallel, 1))
		for i, tc := range msg.ToolCalls {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				res, content := p.toolCall(ctx, tenant, planID, turn, i, tc, emit)
				results[i] = res
				replies[i] = Message{Role: "tool", ToolCallID: tc.ID, Content: content}
			})
		}
		wg.Wait()
		out.Steps = append(out.Steps, results...)
		msgs = append(msgs, replies...)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w after %d model turns", ErrTimeBudget, turn)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: %d model turns without a final answer (raise max_steps or narrow the goal)", ErrStepBudget, maxSteps)
}

// toolCall runs one tool call of the model and returns what to tell it.
func (p *Planner) toolCall(ctx context.Context, tenant, planID string, turn, i int, tc ToolCall, emit EventFunc) (StepResult, string) {
	id := tc.ID
	if id == "" {
		id = fmt.Sprintf("t%d.%d", turn, i+1)
	}
	res := StepResult{ID: id, Tool: tc.Function.Name, Attempts: 1}
	fail := func(e *ErrorBody, lat float64) (StepResult, string) {
		res.Status, res.Error, res.LatencyMS = StatusFailed, e, lat
		emit(Event{Type: EventStepFailed, Step: id, Tool: res.Tool, Attempt: 1, LatencyMS: lat, Error: e})
		b, _ := json.Marshal(map[string]any{"error": e})
		return res, string(b)
	}
	emit(Event{Type: EventStepStarted, Step: id, Tool: res.Tool, Attempt: 1})
	args, err := parseArguments(tc.Function.Arguments)
	if err != nil {
		return fail(&ErrorBody{Code: string(hub.CodeInvalidArguments), Message: err.Error()}, 0)
	}
	if tc.Function.Name == "" {
		return fail(&ErrorBody{Code: string(hub.CodeUnknownTool), Message: "the tool call names no function; call one of the tools you were given"}, 0)
	}
	start := p.now()
	r, err := p.Gateway.Call(ctx, &hub.Call{Tenant: tenant, Name: tc.Function.Name, Arguments: args, PlanID: planID})
	lat := ms(p.now().Sub(start))
	if err != nil {
		e := errorBody(err)
		if e.Code == string(hub.CodeUnknownTool) {
			// A name the model made up: point it at the closest real ones.
			if near := Functions(p.Catalog, p.visibility(), tenant, strings.NewReplacer("_", " ", "-", " ", ".", " ").Replace(tc.Function.Name), 3); len(near) > 0 {
				names := make([]string, len(near))
				for i, f := range near {
					names[i] = f.Function.Name
				}
				e.Message += "; call one of the tools you were given, e.g. " + strings.Join(names, ", ")
			}
		}
		return fail(e, lat)
	}
	if r.IsError {
		return fail(&ErrorBody{Code: string(hub.CodeToolError), Message: hub.TextOf(r)}, lat)
	}
	res.Status, res.LatencyMS = StatusOK, lat
	res.Structured, res.Text = normalize(r.Structured), hub.TextOf(r)
	prov := r.Provenance
	res.Provenance = &prov
	emit(Event{Type: EventStepFinished, Step: id, Tool: res.Tool, Attempt: 1, LatencyMS: lat})
	var content []byte
	if r.Structured != nil {
		content, err = json.Marshal(r.Structured)
	}
	if r.Structured == nil || err != nil {
		content, _ = json.Marshal(map[string]string{"text": res.Text})
	}
	if len(content) > maxToolResult {
		content, _ = json.Marshal(map[string]any{"truncated": true, "partial": string(content[:maxToolResult])})
	}
	return res, string(content)
}

// maxRepeats is how many turns in a row the model may ask for the same
// tool calls before the loop stops.
const maxRepeats = 3

// callsSignature identifies a turn's tool calls: names and arguments
// (re-encoded, so key order and spacing do not matter), in order.
func callsSignature(calls []ToolCall) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(c.Function.Name)
		b.WriteByte(0)
		var v any
		if json.Unmarshal([]byte(c.Function.Arguments), &v) == nil {
			j, _ := json.Marshal(v)
			b.Write(j)
		} else {
			b.WriteString(c.Function.Arguments)
		}
		b.WriteByte(0)
	}
	return b.String()
}

func callNames(calls []ToolCall) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Function.Name
	}
	return strings.Join(names, ", ")
}

// parseArguments decodes a model's arguments string: empty means {}; it
// must be a JSON object.
func parseArguments(s string) (map[string]any, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON (%v); send a JSON object matching the tool's parameters", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s; send an object matching the tool's parameters", jsonKind(v))
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "something else"
}

func (p *Planner) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
