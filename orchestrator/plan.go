package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// Gateway is what the planner needs of [hub.Gateway]: every step and every
// tool call of the model is a normal gateway call.
type Gateway interface {
	Call(ctx context.Context, c *hub.Call) (*hub.Result, error)
	Lookup(tenant, name string) (registry.Entry, bool)
}

var _ Gateway = (*hub.Gateway)(nil)

// IntegrateTool names the built-in step that merges its dependencies'
// results into one summary. It calls nothing.
const IntegrateTool = "integrate"

// What a step does when it fails for good (after its retries).
const (
	Degrade = "degrade" // mark it failed; dependents still run and see null for it (the default)
	Stop    = "stop"    // cancel every step not finished and fail the plan
)

// Plan is a DAG of tool calls.
type Plan struct {
	ID    string `json:"id,omitempty"` // generated when empty; every call carries it as PlanID
	Goal  string `json:"goal,omitempty"`
	Steps []Step `json:"steps"`
}

// Step is one node of a plan: a gateway call to Tool, or the built-in
// [IntegrateTool].
//
// String values in Arguments may reference the result of a step listed in
// DependsOn as {{steps.ID.PATH}}, where PATH is "structured" followed by
// dotted keys or array indexes ("structured.results.0.name"), "text" (the
// text content), or "status". A value that is exactly one reference takes
// the referenced JSON value (a number stays a number); a reference inside
// longer text is interpolated. A failed or missing value is null ("" inside
// text).
type Step struct {
	ID        string         `json:"id"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments,omitempty"`
	DependsOn []string       `json:"depends_on,omitempty"`
	Timeout   Duration       `json:"timeout,omitempty"`    // per attempt; zero means none of its own (the plan's deadline still applies)
	Retries   int            `json:"retries,omitempty"`    // retries after a retryable failure (timeout, unavailable, rate_limited, …)
	OnFailure string         `json:"on_failure,omitempty"` // Degrade (default) or Stop
}

// Duration is a time.Duration that reads "2s" or a number of milliseconds
// in JSON and YAML, and writes "2s".
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case float64:
		*d = Duration(time.Duration(v * float64(time.Millisecond)))
	case string:
		p, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("duration %q: want e.g. \"2s\" or a number of milliseconds", v)
		}
		*d = Duration(p)
	case nil:
		*d = 0
	default:
		return fmt.Errorf("duration %s: want e.g. \"2s\" or a number of milliseconds", b)
	}
	return nil
}

// UnmarshalText lets YAML decoders read "2s".
func (d *Duration) UnmarshalText(b []byte) error {
	if _, err := strconv.ParseFloat(string(b), 64); err == nil {
		return d.UnmarshalJSON(b)
	}
	return d.UnmarshalJSON([]byte(strconv.Quote(string(b))))
}

// ErrInvalidPlan is wrapped by every validation error.
var ErrInvalidPlan = errors.New("orchestrator: invalid plan")

var stepIDRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// refRe matches a reference to a step's result.
var refRe = regexp.MustCompile(`\{\{\s*steps\.([a-zA-Z0-9_-]+)\.([^}\s]+)\s*\}\}`)

// Validate checks p for tenant: step ids unique and well formed, every tool
// known to the tenant, every dependency and reference known, no cycles. lookup
// may be nil to skip the tool check.
func (p *Plan) Validate(tenant string, lookup func(tenant, name string) (registry.Entry, bool)) error {
	if len(p.Steps) == 0 {
		return fmt.Errorf("%w: no steps", ErrInvalidPlan)
	}
	idx := make(map[string]int, len(p.Steps))
	for i, s := range p.Steps {
		if !stepIDRe.MatchString(s.ID) {
			return fmt.Errorf("%w: step %d: id %q must match %s", ErrInvalidPlan, i, s.ID, stepIDRe)
		}
		if _, dup := idx[s.ID]; dup {
			return fmt.Errorf("%w: step id %q is used twice", ErrInvalidPlan, s.ID)
		}
		idx[s.ID] = i
	}
	for _, s := range p.Steps {
		switch s.OnFailure {
		case "", Degrade, Stop:
		default:
			return fmt.Errorf("%w: step %q: on_failure %q: want %q or %q", ErrInvalidPlan, s.ID, s.OnFailure, Degrade, Stop)
		}
		if s.Retries < 0 || s.Timeout < 0 {
			return fmt.Errorf("%w: step %q: negative retries or timeout", ErrInvalidPlan, s.ID)
		}
		if s.Tool != IntegrateTool && lookup != nil {
			if _, ok := lookup(tenant, s.Tool); !ok {
				return fmt.Errorf("%w: step %q: unknown tool %q (list the catalog with GET /v1/tools)", ErrInvalidPlan, s.ID, s.Tool)
			}
		}
		deps := map[string]bool{}
		for _, d := range s.DependsOn {
			if _, ok := idx[d]; !ok {
				return fmt.Errorf("%w: step %q depends on unknown step %q", ErrInvalidPlan, s.ID, d)
			}
			deps[d] = true
		}
		var bad error
		walkStrings(s.Arguments, func(str string) {
			for _, m := range refRe.FindAllStringSubmatch(str, -1) {
				if bad == nil && !deps[m[1]] {
					bad = fmt.Errorf("%w: step %q references %s but does not depend on step %q (add it to depends_on)", ErrInvalidPlan, s.ID, m[0], m[1])
				}
			}
		})
		if bad != nil {
			return bad
		}
	}
	if cyc := findCycle(p.Steps, idx); cyc != nil {
		return fmt.Errorf("%w: dependency cycle %s", ErrInvalidPlan, strings.Join(cyc, " → "))
	}
	return nil
}

// findCycle returns one cycle as step ids, first repeated last, or nil.
func findCycle(steps []Step, idx map[string]int) []string {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(steps))
	var stack []string
	var cycle []string
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, steps[i].ID)
		for _, d := range steps[i].DependsOn {
			j := idx[d]
			switch color[j] {
			case grey:
				k := len(stack) - 1
				for stack[k] != d {
					k--
				}
				cycle = append(append([]string{}, stack[k:]...), d)
				return true
			case white:
				if visit(j) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return false
	}
	for i := range steps {
		if color[i] == white && visit(i) {
			// The walk follows depends_on edges; show the cycle in execution order.
			for l, r := 0, len(cycle)-1; l < r; l, r = l+1, r-1 {
				cycle[l], cycle[r] = cycle[r], cycle[l]
			}
			return cycle
		}
	}
	return nil
}

func walkStrings(v any, fn func(string)) {
	switch v := v.(type) {
	case string:
		fn(v)
	case map[string]any:
		for _, x := range v {
			walkStrings(x, fn)
		}
	case []any:
		for _, x := range v {
			walkStrings(x, fn)
		}
	}
}

// resolveArgs replaces references in args with values from done results.
func resolveArgs(args map[string]any, results map[string]*StepResult) map[string]any {
	if args == nil {
		return nil
	}
	return substitute(args, results).(map[string]any)
}

func substitute(v any, results map[string]*StepResult) any {
	switch v := v.(type) {
	case string:
		if m := refRe.FindStringSubmatchIndex(v); m != nil && m[0] == 0 && m[1] == len(v) {
			return lookupRef(results[v[m[2]:m[3]]], v[m[4]:m[5]])
		}
		return refRe.ReplaceAllStringFunc(v, func(ref string) string {
			m := refRe.FindStringSubmatch(ref)
			switch x := lookupRef(results[m[1]], m[2]).(type) {
			case nil:
				return ""
			case string:
				return x
			default:
				b, _ := json.Marshal(x)
				return string(b)
			}
		})
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = substitute(x, results)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = substitute(x, results)
		}
		return out
	}
	return v
}

func lookupRef(r *StepResult, path string) any {
	if r == nil {
		return nil
	}
	parts := strings.Split(path, ".")
	switch parts[0] {
	case "status":
		return r.Status
	case "text":
		if r.Status != StatusOK {
			return nil
		}
		return r.Text
	case "structured":
		if r.Status != StatusOK {
			return nil
		}
	default:
		return nil
	}
	var cur any = r.Structured
	for _, p := range parts[1:] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}
