package hub

// Outcome is how a call (or one attempt at a vendor tool) ended, in the one
// vocabulary the decision log, the metrics (toolhub_calls_total,
// toolhub_vendor_attempts_total), traces and billing share: ok, fallback,
// cached, stale, queued, tool_error, or the [Code] of the error the call
// failed with. [OutcomeOf] is the one classifier; read an outcome from it,
// never work one out again.
type Outcome string

// The outcomes of a call that did not fail. Every [Code] is an outcome
// too ([OutcomeFor]); the queued code and [OutcomeQueued] are one value.
const (
	OutcomeOK        Outcome = "ok"         // the first vendor tried answered
	OutcomeFallback  Outcome = "fallback"   // a later vendor of a chain answered
	OutcomeCached    Outcome = "cached"     // a fresh cache hit
	OutcomeStale     Outcome = "stale"      // the last known good answer, may not be the latest
	OutcomeQueued    Outcome = "queued"     // accepted as an async job (also the queued error code)
	OutcomeToolError Outcome = "tool_error" // the tool answered with isError: a result, but no success
)

// OutcomeFor is the outcome of a call that failed with code.
func OutcomeFor(code Code) Outcome { return Outcome(code) }

// OutcomeOf classifies a finished call (or attempt) from what it returned.
// In order: an error is its code; then a result's provenance says queued,
// stale, or cached (a stored answer, whatever it says); then a result the
// tool marked isError is tool_error; then fallback; otherwise ok (also for
// no result and no error).
func OutcomeOf(r *Result, err error) Outcome {
	switch {
	case err != nil:
		return Outcome(AsError(err).Code)
	case r == nil:
		return OutcomeOK
	case r.Provenance.Queued:
		return OutcomeQueued
	case r.Provenance.Stale:
		return OutcomeStale
	case r.Provenance.Cached:
		return OutcomeCached
	case r.IsError:
		return OutcomeToolError
	case r.Provenance.Fallback:
		return OutcomeFallback
	}
	return OutcomeOK
}

// Code returns the error code of a failed call's outcome, or "" for an
// outcome that is an answer (ok, fallback, cached, stale, tool_error).
// Queued is both: its code is [CodeQueued].
func (o Outcome) Code() Code {
	switch o {
	case OutcomeOK, OutcomeFallback, OutcomeCached, OutcomeStale, OutcomeToolError:
		return ""
	}
	return Code(o)
}
