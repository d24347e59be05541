package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
)

// JSON-RPC 2.0 error codes used by the front door.
const (
	rpcInvalidRequest = httperr.RPCInvalidRequest
	rpcInvalidParams  = httperr.RPCInvalidParams
)

// rpcCode maps an error code to a JSON-RPC error code (httperr.RPCCode).
func rpcCode(c hub.Code) int { return httperr.RPCCode(c) }

// ErrorBody is the JSON shape of every error toolhub answers: in a REST
// body, in JSON-RPC error data, and in an MCP result's _meta. See
// [httperr.Body] and docs/errors.md.
type ErrorBody = httperr.Body

func errorBody(err error, callID string) ErrorBody {
	return httperr.BodyOf(context.Background(), err, callID)
}

// writeError answers a REST request with a typed error (httperr.Write).
func writeError(w http.ResponseWriter, r *http.Request, err error, callID string) {
	httperr.Write(w, r, err, callID)
}

func writeJSON(w http.ResponseWriter, status int, v any) { httperr.WriteJSON(w, status, v) }

// rpcError is a JSON-RPC error response.
func rpcError(id json.RawMessage, code int, err error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	data := errorBody(err, "")
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
	}{Code: code, Message: data.Message, Data: data}})
	return b
}
