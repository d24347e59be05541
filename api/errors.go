package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/toolhub/toolhub/hub"
)

// JSON-RPC 2.0 error codes used by the front door.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
)

// httpStatus maps an error code to its HTTP status, once, for every REST route.
func httpStatus(c hub.Code) int {
	switch c {
	case hub.CodeInvalidRequest, hub.CodeInvalidArguments:
		return http.StatusBadRequest
	case hub.CodeUnknownTool:
		return http.StatusNotFound
	case hub.CodeUnauthenticated:
		return http.StatusUnauthorized
	case hub.CodeForbidden, hub.CodePrivacy:
		return http.StatusForbidden
	case hub.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case hub.CodeRateLimited:
		return http.StatusTooManyRequests
	case hub.CodeOverloaded, hub.CodeCircuitOpen, hub.CodeUnavailable:
		return http.StatusServiceUnavailable
	case hub.CodeBudgetExceeded:
		return http.StatusPaymentRequired
	case hub.CodeTimeout:
		return http.StatusGatewayTimeout
	case hub.CodeUpstream, hub.CodeInvalidOutput:
		return http.StatusBadGateway
	case hub.CodeQueued:
		return http.StatusAccepted
	case hub.CodeCanceled:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// rpcCode maps an error code to a JSON-RPC error code, for the errors the
// front door answers at the protocol level.
func rpcCode(c hub.Code) int {
	switch c {
	case hub.CodeInvalidArguments, hub.CodeUnknownTool:
		return rpcInvalidParams
	case hub.CodeInvalidRequest, hub.CodeTooLarge:
		return rpcInvalidRequest
	}
	return rpcInternalError
}

// ErrorBody is the JSON shape of every error toolhub answers: in a REST
// body, in JSON-RPC error data, and in an MCP result's _meta.
type ErrorBody struct {
	Code         hub.Code `json:"code"`
	Message      string   `json:"message"`
	Vendor       string   `json:"vendor,omitempty"`
	RetryAfterMS int64    `json:"retry_after_ms,omitempty"`
	Details      any      `json:"details,omitempty"`
	CallID       string   `json:"call_id,omitempty"`
}

func errorBody(err error, callID string) ErrorBody {
	e := hub.AsError(err)
	return ErrorBody{Code: e.Code, Message: e.Message, Vendor: e.Vendor,
		RetryAfterMS: e.RetryAfter.Milliseconds(), Details: e.Details, CallID: callID}
}

// writeError answers a REST request with a typed error.
func writeError(w http.ResponseWriter, err error, callID string) {
	e := hub.AsError(err)
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+999_999_999)/1_000_000_000)))
	}
	writeJSON(w, httpStatus(e.Code), map[string]any{"error": errorBody(e, callID)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// rpcError is a JSON-RPC error response.
func rpcError(id json.RawMessage, code int, err error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int       `json:"code"`
			Message string    `json:"message"`
			Data    ErrorBody `json:"data"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int       `json:"code"`
		Message string    `json:"message"`
		Data    ErrorBody `json:"data"`
	}{Code: code, Message: hub.AsError(err).Message, Data: errorBody(err, "")}})
	return b
}
