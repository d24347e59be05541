package billing

import (
	"math"
	"strconv"
	"time"

	"github.com/toolhub/toolhub/hub"
)

// Outcome is what happened to a call or to one vendor attempt, as the
// ledger stores it: the call's [hub.Outcome] (the one classifier,
// [hub.OutcomeOf]) folded into the ledger's coarser, stable vocabulary by
// [LedgerOutcome], the only place the two meet. Values the two share are
// the same strings.
type Outcome string

// The outcomes an [Event] can carry (and [OutcomeUnknown]).
const (
	OutcomeOK       = Outcome(hub.OutcomeOK)
	OutcomeFallback = Outcome(hub.OutcomeFallback)
	OutcomeCached   = Outcome(hub.OutcomeCached)
	OutcomeStale    = Outcome(hub.OutcomeStale)
	OutcomeQueued   = Outcome(hub.OutcomeQueued)
	OutcomeTimeout  = Outcome(hub.CodeTimeout)
	// OutcomeError is any other failure, and a tool's own error (tool_error).
	OutcomeError Outcome = "error"
	// OutcomeRejected is a call toolhub refused before a vendor answered
	// (budget, limits, breaker, bad arguments…); calls only.
	OutcomeRejected Outcome = "rejected"
)

// LedgerOutcome folds a call's or an attempt's [hub.Outcome] (kind
// [KindCall] or [KindAttempt]) into the ledger's vocabulary: ok, fallback,
// cached, stale, queued and timeout as they are; a call toolhub refused
// (budget_exceeded, rate_limited, overloaded, circuit_open, forbidden,
// privacy_refused, unauthenticated, too_large, invalid_arguments,
// invalid_request, unknown_tool) is rejected; an attempt the caller
// abandoned at the vendor (canceled) is unknown — it may or may not have
// been done; everything else, tool_error included, is error.
func LedgerOutcome(kind Kind, o hub.Outcome) Outcome {
	switch o {
	case hub.OutcomeOK, hub.OutcomeFallback, hub.OutcomeCached, hub.OutcomeStale, hub.OutcomeQueued, hub.OutcomeFor(hub.CodeTimeout):
		return Outcome(o)
	}
	switch kind {
	case KindCall:
		switch o.Code() {
		case hub.CodeBudgetExceeded, hub.CodeRateLimited, hub.CodeOverloaded, hub.CodeCircuitOpen,
			hub.CodeForbidden, hub.CodePrivacy, hub.CodeUnauthenticated, hub.CodeTooLarge,
			hub.CodeInvalidArguments, hub.CodeInvalidRequest, hub.CodeUnknownTool:
			return OutcomeRejected
		}
	case KindAttempt:
		if o.Code() == hub.CodeCanceled {
			return OutcomeUnknown
		}
	}
	return OutcomeError
}

// Unit names. "calls" is always present; the others are read from the top
// level of a result's structured content when the vendor reports them.
const (
	UnitCalls   = "calls"
	UnitImages  = "images"
	UnitTokens  = "tokens"
	UnitSeconds = "seconds"
)

// ReportedUnits are the vendor-reported units read from structured content.
var ReportedUnits = []string{UnitImages, UnitTokens, UnitSeconds}

// Units counts what a call used, by unit name. Quantities are whole numbers:
// fractional vendor-reported values are rounded up (a 2.1 s job bills 3 s).
type Units map[string]int64

// Kind tells a call-outcome event from a vendor-attempt event.
type Kind string

const (
	KindCall    Kind = "call"    // one per call: carries the tenant charge
	KindAttempt Kind = "attempt" // one per vendor attempt: carries the vendor payout
	// KindAdjust corrects an earlier event (named by Adjusts): its units
	// and amounts are added to the totals, it counts no call or attempt.
	KindAdjust Kind = "adjust"
)

// Event is one usage record. Events are append-only: a correction is a new
// event whose Adjusts names the key of the event it corrects, with the
// difference in its amounts.
//
// The tenant charge of a call is on its call event (Kind call); the payout
// to a vendor is on its attempt events. Summing TenantCost over any set of
// events gives what tenants owe; summing VendorCost gives what toolhub owes
// vendors; the two never double count.
type Event struct {
	Key        string        `json:"key"`     // idempotency key: CallID + "/call" or CallID + "/" + attempt index (a job's runs: see Meter.Middleware)
	CallID     string        `json:"call_id"` // the call's id; the job's id for the runs of a job
	Kind       Kind          `json:"kind"`
	Attempt    int           `json:"attempt"` // 1-based index in the call's attempts; 0 for the call event
	Time       time.Time     `json:"time"`    // when the call started (its attempts too)
	Ingested   time.Time     `json:"ingested"`
	Tenant     string        `json:"tenant"`
	Vendor     string        `json:"vendor,omitempty"`
	Tool       string        `json:"tool,omitempty"` // the vendor's own tool name
	Capability string        `json:"capability,omitempty"`
	Outcome    Outcome       `json:"outcome"`
	Reason     string        `json:"reason,omitempty"` // error code and message for error, timeout, rejected
	Latency    time.Duration `json:"latency_ns"`
	Units      Units         `json:"units"`

	TenantUnitPrice Micros `json:"tenant_unit_price"` // per-call price applied (after tiers)
	TenantCost      Micros `json:"tenant_cost"`
	VendorUnitPrice Micros `json:"vendor_unit_price"`
	VendorCost      Micros `json:"vendor_cost"`
	Currency        string `json:"currency"`
	PriceVersion    string `json:"price_version,omitempty"`
	Adjusts         string `json:"adjusts,omitempty"` // key of the event this one corrects
	// AttemptLatency is the latency of the attempt a merged call event
	// stands for (see [MergeAttempt]); zero on every other event.
	AttemptLatency time.Duration `json:"attempt_latency_ns,omitempty"`
}

// CallKey is the idempotency key of a call's outcome event.
func CallKey(callID string) string { return callID + "/call" }

// AttemptKey is the idempotency key of a call's attempt (1-based).
func AttemptKey(callID string, attempt int) string {
	return callID + "/" + strconv.Itoa(attempt)
}

// UnitsFrom reads the vendor-reported units (images, tokens, seconds) from
// the top level of structured content: numbers, rounded up; anything else is
// ignored. calls is always 1.
func UnitsFrom(structured any) Units {
	u := Units{UnitCalls: 1}
	m, ok := structured.(map[string]any)
	if !ok {
		return u
	}
	for _, name := range ReportedUnits {
		var f float64
		switch v := m[name].(type) {
		case float64:
			f = v
		case int:
			f = float64(v)
		case int64:
			f = float64(v)
		case jsonNumber:
			x, err := v.Float64()
			if err != nil {
				continue
			}
			f = x
		default:
			continue
		}
		if f > 0 && !math.IsInf(f, 0) && !math.IsNaN(f) && f < 1<<53 {
			u[name] = int64(math.Ceil(f))
		}
	}
	return u
}

type jsonNumber interface{ Float64() (float64, error) }
