package a2a

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

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/vendorconn"
)

// Sentinel errors. Match them with [errors.Is].
var (
	// ErrUnknownVendor is returned for a vendor id the manager does not hold.
	ErrUnknownVendor = errors.New("a2a: unknown vendor")
	// ErrDuplicateVendor is returned by [Manager.Add] for an id already held.
	ErrDuplicateVendor = errors.New("a2a: vendor already added")
	// ErrNotA2A is returned by [Manager.Add] for a vendor without an a2a section.
	ErrNotA2A = errors.New("a2a: vendor is not an A2A agent")
	// ErrClosed is returned once [Manager.Close] has been called.
	ErrClosed = errors.New("a2a: manager closed")
)

// StatusError is the cause (hub.Error.Err) of a call that failed with an
// HTTP status from the agent. The a2a-go client reports such a response as
// text only; the manager's HTTP client records the status and Retry-After
// so that retry and breaker logic can act on them:
//
//	var s interface{ HTTPStatus() int }
//	if errors.As(err, &s) && s.HTTPStatus() == 429 { … }
type StatusError struct {
	Status int           // the HTTP status code
	Wait   time.Duration // from Retry-After; zero when absent
	Body   string        // the start of the response body
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// HTTPStatus returns the status code.
func (e *StatusError) HTTPStatus() int { return e.Status }

// RetryAfter returns the wait the agent asked for (zero when it asked none).
func (e *StatusError) RetryAfter() time.Duration { return e.Wait }

// statusTransport turns any response that is not 2xx into a *StatusError,
// so its status survives the a2a-go client.
type statusTransport struct {
	base http.RoundTripper
	now  func() time.Time
}

func (t *statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode/100 == 2 {
		return resp, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	return nil, &StatusError{Status: resp.StatusCode, Wait: vendorconn.RetryAfter(resp.Header.Get("Retry-After"), t.now()), Body: strings.TrimSpace(string(b))}
}

// classify turns a client error into a *hub.Error: HTTP 429 is
// rate_limited, 5xx and connection failures unavailable, an A2A or JSON-RPC
// error from the agent (or anything it sent that does not decode)
// upstream_error. The caller's context errors are left to the gateway.
func classify(ctx context.Context, vendor string, err error) error {
	if err == nil {
		return nil
	}
	if e := (*hub.Error)(nil); errors.As(err, &e) {
		return err
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ctx.Err())) {
		return ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	he := &hub.Error{Vendor: vendor, Err: err}
	var se *StatusError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		he.RetryAfter = se.Wait
		switch {
		case se.Status == http.StatusTooManyRequests:
			he.Code = hub.CodeRateLimited
		case se.Status >= 500, se.Status == http.StatusRequestTimeout:
			he.Code = hub.CodeUnavailable
		default:
			he.Code = hub.CodeUpstream
		}
		he.Message = fmt.Sprintf("vendor %q: agent answered %v", vendor, se)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, &ne), errors.Is(err, io.EOF):
		he.Code = hub.CodeUnavailable
		he.Message = fmt.Sprintf("vendor %q: agent not reachable: %v", vendor, err)
	case isA2AError(err):
		he.Code = hub.CodeUpstream
		he.Message = fmt.Sprintf("vendor %q: agent returned an error: %v", vendor, err)
	case strings.Contains(err.Error(), "failed to send HTTP request"):
		he.Code = hub.CodeUnavailable
		he.Message = fmt.Sprintf("vendor %q: agent not reachable: %v", vendor, err)
	default:
		he.Code = hub.CodeUpstream
		he.Message = fmt.Sprintf("vendor %q: %v", vendor, err)
	}
	return he
}

func isA2AError(err error) bool {
	for _, s := range []error{sdk.ErrParseError, sdk.ErrInvalidRequest, sdk.ErrMethodNotFound, sdk.ErrInvalidParams,
		sdk.ErrInternalError, sdk.ErrServerError, sdk.ErrTaskNotFound, sdk.ErrTaskNotCancelable,
		sdk.ErrUnsupportedOperation, sdk.ErrUnsupportedContentType, sdk.ErrInvalidAgentResponse,
		sdk.ErrVersionNotSupported, sdk.ErrUnauthenticated, sdk.ErrUnauthorized} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
