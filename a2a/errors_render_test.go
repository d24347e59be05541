package a2a

import (
	"errors"
	"strings"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
)

// TestA2AErrorFollowsCodeTable checks that a refusal answered over A2A
// picks its JSON-RPC error from httperr's table (A2A's own errors for
// unauthenticated and forbidden) and carries the error body, with no
// internal error's text.
func TestA2AErrorFollowsCodeTable(t *testing.T) {
	base := map[int]error{httperr.RPCInvalidParams: sdk.ErrInvalidParams, httperr.RPCInvalidRequest: sdk.ErrInvalidRequest, httperr.RPCInternalError: sdk.ErrInternalError}
	codes := []hub.Code{hub.CodeInvalidRequest, hub.CodeInvalidArguments, hub.CodeUnknownTool, hub.CodeUnauthenticated,
		hub.CodeForbidden, hub.CodeTooLarge, hub.CodeRateLimited, hub.CodeBudgetExceeded, hub.CodeUnavailable, hub.CodeInternal}
	for _, code := range codes {
		want := base[httperr.RPCCode(code)]
		switch code {
		case hub.CodeUnauthenticated:
			want = sdk.ErrUnauthenticated
		case hub.CodeForbidden:
			want = sdk.ErrUnauthorized
		}
		err := toA2AError(&hub.Error{Code: code, Message: "secret store text"})
		var ae *sdk.Error
		if !errors.As(err, &ae) || !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", code, err, want)
			continue
		}
		data, _ := ae.Details["toolhub/error"].(map[string]any)
		if data["code"] != string(code) {
			t.Errorf("%s: details %v, want code %s", code, ae.Details, code)
		}
		if code == hub.CodeInternal && (strings.Contains(err.Error(), "secret") || data["message"] != httperr.InternalMessage || data["request_id"] == nil) {
			t.Errorf("internal: %v, details %v: want the generic message and a request_id", err, data)
		}
	}
}
