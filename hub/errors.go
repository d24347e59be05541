package hub

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Code is a stable error code that callers can act on. Codes are mapped
// once, by package hub/httperr, to HTTP statuses and JSON-RPC error codes.
type Code string

// The error codes. They are part of toolhub's API: never rename one.
const (
	CodeInvalidRequest   Code = "invalid_request"   // malformed request (bad JSON, wrong shape)
	CodeInvalidArguments Code = "invalid_arguments" // arguments fail the input schema
	CodeUnknownTool      Code = "unknown_tool"      // no such tool or capability
	CodeUnauthenticated  Code = "unauthenticated"   // no or bad credentials
	CodeForbidden        Code = "forbidden"         // not allowed for this tenant
	CodeTooLarge         Code = "too_large"         // request over a size limit
	CodeRateLimited      Code = "rate_limited"      // over a rate limit; see RetryAfter
	CodeOverloaded       Code = "overloaded"        // concurrency bulkhead full
	CodeCircuitOpen      Code = "circuit_open"      // the vendor's breaker is open
	CodeBudgetExceeded   Code = "budget_exceeded"   // a hard budget would be passed
	CodeTimeout          Code = "timeout"           // the vendor did not answer in time
	CodeUnavailable      Code = "unavailable"       // the vendor is down or unreachable
	CodeUpstream         Code = "upstream_error"    // the vendor answered with a protocol error
	CodeInvalidOutput    Code = "invalid_output"    // the vendor's result broke its output schema
	CodePrivacy          Code = "privacy_refused"   // data too sensitive for every allowed vendor
	CodeQueued           Code = "queued"            // accepted as an async job
	CodeCanceled         Code = "canceled"          // the caller went away
	CodeInternal         Code = "internal"          // a bug in toolhub, or a store that failed; the text stays in the log

	// CodeToolError is [OutcomeToolError] as a code: the tool answered with
	// isError, where a caller needs that as an error (a plan step, the
	// error body of an OpenAI tool message).
	CodeToolError = Code(OutcomeToolError)

	// Codes of the HTTP routes around the call path (jobs, admin, reports,
	// the dashboard, the front door's admission checks).
	CodeNotFound         Code = "not_found"              // no such job, webhook, page (for this caller)
	CodeConflict         Code = "conflict"               // the thing is not in a state that allows this
	CodeMethodNotAllowed Code = "method_not_allowed"     // the route takes other methods; see the Allow header
	CodeUnsupportedMedia Code = "unsupported_media_type" // the body is not application/json
	CodeRequestTimeout   Code = "request_timeout"        // the request body did not arrive in time
)

// Error is toolhub's typed error. Match it with errors.As.
type Error struct {
	Code       Code
	Message    string        // what was wrong and what to do
	Vendor     string        // the vendor involved, if any
	RetryAfter time.Duration // when retrying may help (rate_limited, circuit_open, …)
	Details    any           // JSON-able details (e.g. schema issues)
	Err        error         // the cause, if any
	// HubState marks an error of the hub's own making (a vendor connection
	// being made, remade or drained), not a failure of the vendor: the
	// breakers, the health probes and the degradation modes ignore it.
	HubState bool
}

// IsHubState reports whether err is of the hub's own making ([Error.HubState]).
func IsHubState(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.HubState
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return string(e.Code) + ": " + e.Err.Error()
	}
	return string(e.Code) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with a formatted message. A %w verb sets Err.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// AsError returns err as an *Error, classifying plain errors: context
// errors become timeout / canceled, anything else internal.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Message: "deadline exceeded", Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Code: CodeCanceled, Message: "call canceled", Err: err}
	}
	return &Error{Code: CodeInternal, Message: err.Error(), Err: err}
}

// CodeOf returns the code of err ("" for nil).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return AsError(err).Code
}

// VendorFault reports whether an error counts against the vendor's health
// (breakers, degradation): timeouts, unavailability, protocol errors and
// lying outputs do; the caller's mistakes and toolhub's own refusals do not.
func VendorFault(code Code) bool {
	switch code {
	case CodeTimeout, CodeUnavailable, CodeUpstream, CodeInvalidOutput:
		return true
	}
	return false
}
