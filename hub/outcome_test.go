package hub

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestOutcomeOf(t *testing.T) {
	tests := []struct {
		name string
		r    *Result
		err  error
		want Outcome
	}{
		{"answered", &Result{}, nil, OutcomeOK},
		{"no result, no error", nil, nil, OutcomeOK},
		{"later vendor of the chain", &Result{Provenance: Provenance{Fallback: true}}, nil, OutcomeFallback},
		{"fresh cache hit", &Result{Provenance: Provenance{Cached: true}}, nil, OutcomeCached},
		{"last known good", &Result{Provenance: Provenance{Stale: true, Cached: true}}, nil, OutcomeStale},
		{"accepted as a job", &Result{Provenance: Provenance{Queued: true, JobID: "j1"}}, nil, OutcomeQueued},
		{"tool reported an error", &Result{IsError: true}, nil, OutcomeToolError},
		{"tool error from a later vendor", &Result{IsError: true, Provenance: Provenance{Fallback: true}}, nil, OutcomeToolError},
		{"cached answer wins over its isError", &Result{IsError: true, Provenance: Provenance{Cached: true}}, nil, OutcomeCached},
		{"typed error", nil, &Error{Code: CodeRateLimited}, Outcome("rate_limited")},
		{"wrapped typed error", nil, fmt.Errorf("x: %w", &Error{Code: CodeCircuitOpen}), Outcome("circuit_open")},
		{"queued as an error", nil, &Error{Code: CodeQueued}, OutcomeQueued},
		{"error wins over a result", &Result{}, &Error{Code: CodeTimeout}, Outcome("timeout")},
		{"deadline", nil, context.DeadlineExceeded, Outcome("timeout")},
		{"canceled", nil, context.Canceled, Outcome("canceled")},
		{"plain error", nil, errors.New("boom"), Outcome("internal")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OutcomeOf(tt.r, tt.err); got != tt.want {
				t.Errorf("OutcomeOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOutcomeCode(t *testing.T) {
	for _, tt := range []struct {
		o    Outcome
		code Code
	}{
		{OutcomeOK, ""}, {OutcomeFallback, ""}, {OutcomeCached, ""}, {OutcomeStale, ""}, {OutcomeToolError, ""},
		{OutcomeQueued, CodeQueued}, {OutcomeFor(CodeTimeout), CodeTimeout}, {OutcomeFor(CodeUnknownTool), CodeUnknownTool},
	} {
		if got := tt.o.Code(); got != tt.code {
			t.Errorf("%q.Code() = %q, want %q", tt.o, got, tt.code)
		}
	}
	if OutcomeFor(CodeQueued) != OutcomeQueued {
		t.Error("the queued code and the queued outcome differ")
	}
}

// TestAttemptOutcomeToolError: an attempt whose result the tool marked
// isError is recorded tool_error, by the same classifier as the call.
func TestAttemptOutcomeToolError(t *testing.T) {
	gw := NewGateway(testCatalog(t), vendors{"weather-a": func(ctx context.Context, c *Call) (*Result, error) {
		return &Result{IsError: true}, nil
	}}, nil)
	c := &Call{Name: "weather-a__current", Arguments: map[string]any{"city": "x"}}
	r, err := gw.Call(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := OutcomeOf(r, nil); got != OutcomeToolError {
		t.Errorf("call outcome %q, want tool_error", got)
	}
	if len(c.Trace.Attempts) != 1 || c.Trace.Attempts[0].Outcome != OutcomeToolError {
		t.Errorf("attempts %+v, want one tool_error", c.Trace.Attempts)
	}
}
