package httperr

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/toolhub/toolhub/hub"
)

// JSON-RPC 2.0 error codes (the MCP front door, A2A).
const (
	RPCParseError     = -32700
	RPCInvalidRequest = -32600
	RPCInvalidParams  = -32602
	RPCInternalError  = -32603
)

// InternalMessage is what a client reads for an internal error: the error
// itself goes to the log, under the call_id or request_id of the body.
const InternalMessage = "toolhub failed to answer this request; try again, and if it keeps failing give the operator this call_id or request_id"

// Status returns the HTTP status of an error code: one table for every
// route. An unknown code is 500.
func Status(c hub.Code) int {
	switch c {
	case hub.CodeInvalidRequest, hub.CodeInvalidArguments:
		return http.StatusBadRequest
	case hub.CodeUnauthenticated:
		return http.StatusUnauthorized
	case hub.CodeBudgetExceeded:
		return http.StatusPaymentRequired
	case hub.CodeForbidden, hub.CodePrivacy:
		return http.StatusForbidden
	case hub.CodeUnknownTool, hub.CodeNotFound:
		return http.StatusNotFound
	case hub.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case hub.CodeCanceled, hub.CodeRequestTimeout:
		return http.StatusRequestTimeout
	case hub.CodeConflict:
		return http.StatusConflict
	case hub.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case hub.CodeUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case hub.CodeRateLimited:
		return http.StatusTooManyRequests
	case hub.CodeUpstream, hub.CodeInvalidOutput:
		return http.StatusBadGateway
	case hub.CodeOverloaded, hub.CodeCircuitOpen, hub.CodeUnavailable:
		return http.StatusServiceUnavailable
	case hub.CodeTimeout:
		return http.StatusGatewayTimeout
	case hub.CodeQueued:
		return http.StatusAccepted
	}
	return http.StatusInternalServerError
}

// RPCCode returns the JSON-RPC error code of an error code, for errors
// answered at the protocol level (the error's data carries the [Body],
// whose code says more): arguments or a tool the caller got wrong are
// invalid params; a request the front door refuses is an invalid request;
// everything else is an internal error.
func RPCCode(c hub.Code) int {
	switch c {
	case hub.CodeInvalidArguments, hub.CodeUnknownTool:
		return RPCInvalidParams
	case hub.CodeInvalidRequest, hub.CodeTooLarge, hub.CodeUnauthenticated, hub.CodeForbidden,
		hub.CodeMethodNotAllowed, hub.CodeUnsupportedMedia, hub.CodeRequestTimeout:
		return RPCInvalidRequest
	}
	return RPCInternalError
}

// Body is the JSON shape of every error toolhub answers: under "error" in
// an HTTP response body, as a JSON-RPC error's data, and in an MCP
// result's _meta. Clients act on Code.
type Body struct {
	Code         hub.Code `json:"code"`
	Message      string   `json:"message"`
	Vendor       string   `json:"vendor,omitempty"`
	RetryAfterMS int64    `json:"retry_after_ms,omitempty"`
	Details      any      `json:"details,omitempty"`
	CallID       string   `json:"call_id,omitempty"`
	// RequestID names an internal error in the log when there is no
	// CallID.
	RequestID string `json:"request_id,omitempty"`
}

// BodyOf returns the body of err (classified by [hub.AsError]) for the
// call callID ("" for none). An internal error, typed or not, answers
// [InternalMessage] and nothing of its own text: it is logged instead, at
// error level, with the logger of ctx ([WithLogger]; slog.Default()
// without one), under the call id or a new request id.
func BodyOf(ctx context.Context, err error, callID string) Body {
	e := hub.AsError(err)
	if e == nil {
		e = &hub.Error{Code: hub.CodeInternal}
	}
	b := Body{Code: e.Code, Message: e.Message, Vendor: e.Vendor,
		RetryAfterMS: e.RetryAfter.Milliseconds(), Details: e.Details, CallID: callID}
	if e.Code == hub.CodeInternal || Status(e.Code) == http.StatusInternalServerError {
		b = Body{Code: hub.CodeInternal, Message: InternalMessage, CallID: callID}
		attrs := []any{"code", e.Code, "err", errText(err)}
		if callID != "" {
			attrs = append(attrs, "call_id", callID)
		} else {
			b.RequestID = hub.NewCallID()
			attrs = append(attrs, "request_id", b.RequestID)
		}
		LoggerFrom(ctx).ErrorContext(ctx, "httperr: internal error answered as 500 internal", attrs...)
	}
	return b
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// Write answers r with err: the status of its code, a Retry-After header
// when retrying may help, and the JSON body {"error": [Body]}. callID is
// the call the request made ("" for none). An internal error is logged
// (see [BodyOf]) with the request's method and path.
func Write(w http.ResponseWriter, r *http.Request, err error, callID string) {
	ctx := context.Background()
	if r != nil {
		ctx = WithLogger(r.Context(), LoggerFrom(r.Context()).With("method", r.Method, "path", r.URL.Path))
	}
	b := BodyOf(ctx, err, callID)
	if e := hub.AsError(err); e != nil && e.RetryAfter > 0 && b.Code != hub.CodeInternal {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((e.RetryAfter+999_999_999)/1_000_000_000), 10))
	}
	WriteJSON(w, Status(b.Code), map[string]any{"error": b})
}

// WriteJSON answers with status and v as JSON (HTML characters left
// unescaped).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

type loggerKey struct{}

// WithLogger returns ctx carrying l, the logger [Write] and [BodyOf]
// record internal errors with.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// LoggerFrom returns the logger of ctx, or slog.Default().
func LoggerFrom(ctx context.Context) *slog.Logger {
	if ctx != nil {
		if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
			return l
		}
	}
	return slog.Default()
}
