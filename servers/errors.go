package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/vendorconn"
	"github.com/toolhub/toolhub/registry"
)

// Sentinel errors. Match them with [errors.Is].
var (
	// ErrUnknownVendor is returned for a vendor id the manager does not hold.
	ErrUnknownVendor = errors.New("servers: unknown vendor")
	// ErrDuplicateVendor is returned by [Manager.Add] for an id already held.
	ErrDuplicateVendor = errors.New("servers: vendor already added")
	// ErrNotMCP is returned by [Manager.Add] for a vendor without an mcp section.
	ErrNotMCP = errors.New("servers: vendor is not an MCP server")
	// ErrClosed is returned once [Manager.Close] has been called.
	ErrClosed = errors.New("servers: manager closed")
	// ErrResponseTooLarge is the cause of a call whose response passed
	// [Options.MaxResponseBytes].
	ErrResponseTooLarge = errors.New("servers: response too large")
	// ErrToolListLoop is the cause of a tool sync stopped by a repeating
	// cursor or by [MaxTools].
	ErrToolListLoop = errors.New("servers: tools/list does not end")
)

// StatusError is the cause (hub.Error.Err) of a call that failed with an
// HTTP status from the vendor. mcp-go turns such a response into error text
// only; the manager's HTTP client records the status and Retry-After so
// that retry and breaker logic can act on them:
//
//	var s interface{ HTTPStatus() int }
//	if errors.As(err, &s) && s.HTTPStatus() == 429 { … }
type StatusError struct {
	Status int           // the HTTP status code
	Wait   time.Duration // from Retry-After; zero when absent
	msg    string        // redacted
	err    error
}

func (e *StatusError) Error() string { return e.msg }

// Unwrap returns the error mcp-go reported.
func (e *StatusError) Unwrap() error { return e.err }

// HTTPStatus returns the status code.
func (e *StatusError) HTTPStatus() int { return e.Status }

// RetryAfter returns the wait the vendor asked for (zero when it asked none).
func (e *StatusError) RetryAfter() time.Duration { return e.Wait }

// RPCError is the cause of an upstream_error: the vendor answered with a
// JSON-RPC error.
type RPCError struct {
	Code    int
	Message string // redacted
	err     error
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
}

// Unwrap returns the error mcp-go reported.
func (e *RPCError) Unwrap() error { return e.err }

// redactedError hides secrets in an error's text while keeping its chain
// for errors.Is / errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// classify turns the failure of one request into a *hub.Error. rec holds
// what the HTTP client and the transport saw of the request (nil for
// none); ctx is the attempt's context.
func classify(ctx context.Context, vendor string, err error, rec *record, red *vendorconn.Redactor) *hub.Error {
	msg := red.Redact(err.Error())
	cause := &redactedError{msg: msg, err: err}
	var snap recordSnapshot
	if rec != nil {
		snap = rec.snapshot()
	}

	if snap.tooLarge {
		return &hub.Error{Code: hub.CodeUpstream, Vendor: vendor,
			Message: fmt.Sprintf("vendor %q: response is over the size limit; the vendor must answer smaller or the limit be raised", vendor),
			Err:     fmt.Errorf("%w: %w", ErrResponseTooLarge, cause)}
	}
	if s := snap.status; s >= 400 {
		se := &StatusError{Status: s, Wait: snap.retryAfter, msg: msg, err: err}
		e := &hub.Error{Vendor: vendor, RetryAfter: snap.retryAfter, Err: se,
			Details: map[string]any{"http_status": s}}
		switch {
		case errors.Is(err, transport.ErrSessionTerminated):
			// The vendor no longer knows the session (it restarted): the
			// connection is re-dialled.
			e.Code = hub.CodeUnavailable
			e.Message = fmt.Sprintf("vendor %q ended the session (HTTP %d); reconnecting", vendor, s)
		case s == http.StatusTooManyRequests:
			e.Code = hub.CodeRateLimited
			e.Message = fmt.Sprintf("vendor %q is rate limiting (HTTP 429)", vendor)
			if snap.retryAfter > 0 {
				e.Message += fmt.Sprintf("; retry after %v", snap.retryAfter)
			}
		case s >= 500:
			e.Code = hub.CodeUnavailable
			e.Message = fmt.Sprintf("vendor %q answered HTTP %d %s", vendor, s, http.StatusText(s))
		case s == http.StatusRequestTimeout:
			e.Code = hub.CodeTimeout
			e.Message = fmt.Sprintf("vendor %q answered HTTP 408 Request Timeout", vendor)
		case s == http.StatusUnauthorized || s == http.StatusForbidden:
			e.Code = hub.CodeUnavailable
			e.Message = fmt.Sprintf("vendor %q refused toolhub's credentials (HTTP %d); check the vendor's headers", vendor, s)
		default:
			e.Code = hub.CodeUpstream
			e.Message = fmt.Sprintf("vendor %q answered HTTP %d %s", vendor, s, http.StatusText(s))
		}
		return e
	}
	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.DeadlineExceeded):
		return &hub.Error{Code: hub.CodeTimeout, Vendor: vendor, Message: fmt.Sprintf("vendor %q did not answer in time", vendor), Err: cause}
	case cerr != nil:
		return &hub.Error{Code: hub.CodeCanceled, Vendor: vendor, Message: "call canceled", Err: cause}
	}
	if d := snap.rpcErr; d != nil {
		re := &RPCError{Code: d.Code, Message: red.Redact(truncate(d.Message, registry.MaxVendorMessageBytes)), err: err}
		return &hub.Error{Code: hub.CodeUpstream, Vendor: vendor,
			Message: fmt.Sprintf("vendor %q answered with an error: %s", vendor, re.Error()),
			Details: map[string]any{"jsonrpc_code": d.Code}, Err: re}
	}
	if connFailure(err) || snap.netErr != nil {
		return &hub.Error{Code: hub.CodeUnavailable, Vendor: vendor, Message: fmt.Sprintf("vendor %q is unreachable: %s", vendor, msg), Err: cause}
	}
	if strings.Contains(msg, "timeout waiting for SSE response") {
		return &hub.Error{Code: hub.CodeTimeout, Vendor: vendor, Message: fmt.Sprintf("vendor %q did not answer in time", vendor), Err: cause}
	}
	var te *transport.Error
	if errors.As(err, &te) {
		// Any other transport failure: the vendor could not be talked to.
		return &hub.Error{Code: hub.CodeUnavailable, Vendor: vendor, Message: fmt.Sprintf("vendor %q: %s", vendor, msg), Err: cause}
	}
	// Not a transport error, not a JSON-RPC error seen on the wire: the
	// vendor's answer could not be understood (bad JSON, wrong shape).
	return &hub.Error{Code: hub.CodeUpstream, Vendor: vendor, Message: fmt.Sprintf("vendor %q: %s", vendor, msg), Err: cause}
}

// connFailure reports whether err means the connection itself is broken:
// refused, reset, closed, or the process gone.
func connFailure(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, transport.ErrTransportClosed), errors.Is(err, net.ErrClosed),
		errors.Is(err, errConnLost):
		return true
	}
	var ne *net.OpError
	if errors.As(err, &ne) {
		return true
	}
	// The SSE transport reports a closed connection as text only.
	msg := err.Error()
	return strings.Contains(msg, "connection has been closed") || strings.Contains(msg, "transport has been closed")
}

// errConnLost marks a connection the manager gave up on.
var errConnLost = errors.New("servers: connection lost")
