package servers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
)

// Multi round trips (protocol 2026-07-28, SEP-2322): a vendor that needs
// input mid-call answers tools/call with resultType "input_required",
// inputRequests (sampling/createMessage, elicitation/create, roots/list,
// each keyed by an id) and an opaque requestState; the client fulfils the
// requests and calls again with inputResponses and the state echoed.
//
// toolhub relays each round trip as a call of its own (governed, metered,
// never cached): the vendor's result becomes a [hub.Result] with Input,
// the client's retry a [hub.Call] with Input. The requestState the client
// sees is toolhub's: it names the vendor and tool that asked and carries
// the vendor's own state, so the retry goes back to that vendor's tool and
// nowhere else, on whichever toolhub instance it lands. Bounds: at most
// [MaxInputRequests] requests in a result and responses in a retry, and a
// vendor state of at most [MaxRequestState] bytes.

// MaxInputRequests bounds the input requests of one result and the input
// responses of one retry.
const MaxInputRequests = 16

// MaxRequestState bounds a vendor's requestState, in bytes.
const MaxRequestState = 64 << 10

// statePrefix starts every requestState toolhub hands a client.
const statePrefix = "toolhub.mrtr.1."

// mrtrState is what toolhub's requestState carries.
type mrtrState struct {
	Vendor string `json:"v"`
	Tool   string `json:"t"`
	State  string `json:"s,omitempty"`
}

// wrapState is the requestState the client gets for a vendor's.
func wrapState(vendor, tool, state string) string {
	b, _ := json.Marshal(mrtrState{Vendor: vendor, Tool: tool, State: state})
	return statePrefix + base64.RawURLEncoding.EncodeToString(b)
}

// unwrapState returns the vendor's requestState from toolhub's, refusing
// one toolhub did not give for this vendor's tool.
func unwrapState(vendor, tool, state string) (string, error) {
	bad := func(why string) error {
		return &hub.Error{Code: hub.CodeInvalidArguments, Vendor: vendor,
			Message: fmt.Sprintf("tool %q: requestState %s: echo the requestState of the input_required result this call answers, unchanged", tool, why)}
	}
	rest, ok := strings.CutPrefix(state, statePrefix)
	if !ok {
		return "", bad("is not one toolhub gave")
	}
	if len(rest) > base64.RawURLEncoding.EncodedLen(MaxRequestState+1024) {
		return "", bad("is too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	var s mrtrState
	if err != nil || json.Unmarshal(b, &s) != nil {
		return "", bad("is not one toolhub gave")
	}
	if s.Vendor != vendor || s.Tool != tool {
		return "", bad(fmt.Sprintf("was given for tool %q of vendor %q", s.Tool, s.Vendor))
	}
	return s.State, nil
}

// inputRequired turns a vendor's input_required result into a
// [hub.Result], checking its bounds and that each request is one MCP
// defines (mcp-go's decoding of the union refuses others).
func inputRequired(vendor, tool string, raw []byte) (*hub.Result, error) {
	var w struct {
		InputRequests json.RawMessage `json:"inputRequests"`
		RequestState  string          `json:"requestState"`
	}
	bad := func(format string, a ...any) error {
		return &hub.Error{Code: hub.CodeUpstream, Vendor: vendor,
			Message: fmt.Sprintf("vendor %q: tool %q asked for input with ", vendor, tool) + fmt.Sprintf(format, a...)}
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, bad("a result toolhub cannot read: %v", err)
	}
	reqs := bytes.TrimSpace(w.InputRequests)
	if len(reqs) == 0 || bytes.Equal(reqs, []byte("null")) {
		reqs = []byte("{}") // load shedding: retry with the state echoed
	}
	var typed mcp.InputRequests
	if err := json.Unmarshal(reqs, &typed); err != nil {
		return nil, bad("inputRequests toolhub cannot relay: %v", err)
	}
	if len(typed) > MaxInputRequests {
		return nil, bad("%d inputRequests (toolhub relays at most %d)", len(typed), MaxInputRequests)
	}
	if len(typed) == 0 && w.RequestState == "" {
		return nil, bad("neither inputRequests nor a requestState")
	}
	if len(w.RequestState) > MaxRequestState {
		return nil, bad("a requestState of %d bytes (toolhub relays at most %d)", len(w.RequestState), MaxRequestState)
	}
	return &hub.Result{Content: []mcp.Content{}, Input: &hub.InputRequired{Requests: reqs, State: wrapState(vendor, tool, w.RequestState)}}, nil
}

// inputResponses checks a retry's params and returns them as they go to
// the vendor: the responses as sent, the vendor's own state.
func inputResponses(vendor, tool string, in *hub.InputResponses) (*hub.InputResponses, error) {
	state, err := unwrapState(vendor, tool, in.State)
	if err != nil {
		return nil, err
	}
	resp := bytes.TrimSpace(in.Responses)
	if len(resp) == 0 || bytes.Equal(resp, []byte("null")) {
		resp = nil
	} else {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(resp, &m); err != nil {
			return nil, &hub.Error{Code: hub.CodeInvalidArguments, Vendor: vendor, Message: fmt.Sprintf("tool %q: inputResponses must be a JSON object of answers by request id: %v", tool, err)}
		}
		if len(m) > MaxInputRequests {
			return nil, &hub.Error{Code: hub.CodeInvalidArguments, Vendor: vendor, Message: fmt.Sprintf("tool %q: %d inputResponses (toolhub relays at most %d)", tool, len(m), MaxInputRequests)}
		}
	}
	return &hub.InputResponses{Responses: resp, State: state}, nil
}
