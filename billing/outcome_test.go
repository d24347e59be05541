package billing_test

import (
	"errors"
	"testing"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub"
)

func TestLedgerOutcome(t *testing.T) {
	tests := []struct {
		name string
		kind billing.Kind
		o    hub.Outcome
		want billing.Outcome
	}{
		{"ok", billing.KindCall, hub.OutcomeOK, billing.OutcomeOK},
		{"fallback", billing.KindCall, hub.OutcomeFallback, billing.OutcomeFallback},
		{"cached", billing.KindCall, hub.OutcomeCached, billing.OutcomeCached},
		{"stale", billing.KindCall, hub.OutcomeStale, billing.OutcomeStale},
		{"queued", billing.KindCall, hub.OutcomeQueued, billing.OutcomeQueued},
		{"timeout", billing.KindCall, hub.OutcomeFor(hub.CodeTimeout), billing.OutcomeTimeout},
		{"tool error", billing.KindCall, hub.OutcomeToolError, billing.OutcomeError},
		{"refused: rate limit", billing.KindCall, hub.OutcomeFor(hub.CodeRateLimited), billing.OutcomeRejected},
		{"refused: budget", billing.KindCall, hub.OutcomeFor(hub.CodeBudgetExceeded), billing.OutcomeRejected},
		{"refused: unknown tool", billing.KindCall, hub.OutcomeFor(hub.CodeUnknownTool), billing.OutcomeRejected},
		{"vendor down", billing.KindCall, hub.OutcomeFor(hub.CodeUnavailable), billing.OutcomeError},
		{"call canceled", billing.KindCall, hub.OutcomeFor(hub.CodeCanceled), billing.OutcomeError},
		{"attempt ok", billing.KindAttempt, hub.OutcomeOK, billing.OutcomeOK},
		{"attempt timeout", billing.KindAttempt, hub.OutcomeFor(hub.CodeTimeout), billing.OutcomeTimeout},
		{"attempt tool error", billing.KindAttempt, hub.OutcomeToolError, billing.OutcomeError},
		{"attempt canceled at the vendor", billing.KindAttempt, hub.OutcomeFor(hub.CodeCanceled), billing.OutcomeUnknown},
		{"attempt: the vendor's own 429", billing.KindAttempt, hub.OutcomeFor(hub.CodeRateLimited), billing.OutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := billing.LedgerOutcome(tt.kind, tt.o); got != tt.want {
				t.Errorf("LedgerOutcome(%s, %q) = %q, want %q", tt.kind, tt.o, got, tt.want)
			}
		})
	}
}

// TestCallFactsUsesHubOutcome: billing reads a call's outcome from
// hub.OutcomeOf, the classifier the decision log and metrics use, and only
// folds it into the ledger's vocabulary.
func TestCallFactsUsesHubOutcome(t *testing.T) {
	cases := []struct {
		r   *hub.Result
		err error
	}{
		{&hub.Result{}, nil},
		{&hub.Result{IsError: true}, nil},
		{&hub.Result{IsError: true, Provenance: hub.Provenance{Fallback: true}}, nil},
		{&hub.Result{Provenance: hub.Provenance{Fallback: true}}, nil},
		{&hub.Result{Provenance: hub.Provenance{Cached: true}}, nil},
		{&hub.Result{Provenance: hub.Provenance{Stale: true}}, nil},
		{&hub.Result{Provenance: hub.Provenance{Queued: true, JobID: "j"}}, nil},
		{nil, &hub.Error{Code: hub.CodeQueued}},
		{nil, &hub.Error{Code: hub.CodeRateLimited}},
		{nil, &hub.Error{Code: hub.CodeTimeout}},
		{nil, errors.New("boom")},
	}
	for _, tc := range cases {
		c := &hub.Call{ID: "c", Tenant: "acme", Name: "x"}
		f := billing.CallFacts(c, tc.r, tc.err)
		want := hub.OutcomeOf(tc.r, tc.err)
		if f.Call != want || f.Outcome != billing.LedgerOutcome(billing.KindCall, want) {
			t.Errorf("CallFacts(%+v, %v) = %q/%q, want %q/%q", tc.r, tc.err, f.Call, f.Outcome, want, billing.LedgerOutcome(billing.KindCall, want))
		}
	}
}
