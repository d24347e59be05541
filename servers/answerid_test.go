package servers

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// answerTransport answers every request with resp.
type answerTransport struct {
	transport.Interface
	resp *transport.JSONRPCResponse
}

func (a answerTransport) SendRequest(context.Context, transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return a.resp, nil
}

// TestTapRefusesAnotherRequestsAnswer (issue 32, item 7): mcp-go's
// streamable HTTP transport takes the first response on a request's
// stream whatever its id; the tap fails the request instead.
func TestTapRefusesAnotherRequestsAnswer(t *testing.T) {
	req := transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(3)), Method: "tools/call"}
	for _, tc := range []struct {
		name string
		id   any
		err  *mcp.JSONRPCErrorDetails
		ok   bool
	}{
		{"its own id", int64(3), nil, true},
		{"its own id as a float", float64(3), nil, true},
		{"another id", int64(4), nil, false},
		{"a string id", "3", nil, false},
		{"no id", nil, nil, false},
		{"an error without an id", nil, &mcp.JSONRPCErrorDetails{Code: mcp.PARSE_ERROR, Message: "bad"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &transport.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(tc.id), Result: []byte(`{"content":[]}`), Error: tc.err}
			tp := &tap{Interface: answerTransport{resp: resp}}
			got, err := tp.SendRequest(context.Background(), req)
			if tc.ok != (err == nil) || (err != nil && (got != nil || !strings.Contains(err.Error(), "another request"))) {
				t.Errorf("answer with id %v: %v, %v", tc.id, got, err)
			}
		})
	}
}
