package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// Arguments are a call's arguments as a client sends them: a JSON object,
// or a JSON string holding one, as chat-completions models write
// function.arguments ("{\"city\":\"Paris\"}"). null and "" mean none.
type Arguments map[string]any

// UnmarshalJSON accepts an object, null, or a string holding an object.
func (a *Arguments) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if b = bytes.TrimSpace([]byte(s)); len(b) == 0 {
			*a = nil
			return nil
		}
		if d := registry.JSONDepth(b); d > MaxJSONDepth {
			return fmt.Errorf("arguments nest %d levels deep, over the limit of %d", d, MaxJSONDepth)
		}
		if b[0] != '{' {
			return fmt.Errorf("arguments: the string must hold a JSON object, like \"{\\\"city\\\": \\\"Paris\\\"}\"")
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("arguments must be a JSON object, or a string holding one: %v", err)
	}
	*a = m
	return nil
}

// MaxToolCalls bounds the tool calls of one POST /v1/tool_calls.
const MaxToolCalls = 64

// maxToolContent bounds a tool message's content (the same bound as the
// planner's tool loop).
const maxToolContent = 16 << 10

// ToolCall is one entry of an assistant message's tool_calls, in the
// chat-completions format.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type,omitempty"` // "function"
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // a JSON string as models send it, or an object
	} `json:"function"`
}

// ToolCallsRequest is the body of POST /v1/tool_calls: the assistant
// message as the model returned it (role, content and tool_calls; the
// other message fields are read and ignored), plus toolhub's call options
// applied to every call.
type ToolCallsRequest struct {
	Role      string     `json:"role,omitempty"` // "assistant" when given
	ToolCalls []ToolCall `json:"tool_calls"`

	Content     json.RawMessage `json:"content,omitempty"`
	Refusal     json.RawMessage `json:"refusal,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Audio       json.RawMessage `json:"audio,omitempty"`
	Name        json.RawMessage `json:"name,omitempty"`

	Meta      map[string]any `json:"_meta,omitempty"`
	Priority  string         `json:"priority,omitempty"`
	DataLevel *int           `json:"data_level,omitempty"`
}

// ToolMessage is a chat-completions message of role "tool": append the
// messages of a ToolCallsResponse to the conversation as they are.
type ToolMessage struct {
	Role       string `json:"role"` // "tool"
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// ToolCallResult is what toolhub knows of one tool call beside the
// message the model reads: where the answer came from, or the typed error.
type ToolCallResult struct {
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	OK         bool            `json:"ok"`
	IsError    bool            `json:"isError,omitempty"` // the tool itself reported an error
	Provenance *hub.Provenance `json:"provenance,omitempty"`
	Error      *ErrorBody      `json:"error,omitempty"`
}

// ToolCallsResponse answers POST /v1/tool_calls: one tool message per tool
// call, in order, and beside them the results with provenance.
type ToolCallsResponse struct {
	Messages []ToolMessage    `json:"messages"`
	Results  []ToolCallResult `json:"results"`
}

// toolCalls runs an assistant message's tool calls in parallel, each
// through the gateway like POST /v1/tools/{name}/call, each failing alone.
func (s *Server) toolCalls(w http.ResponseWriter, r *http.Request) {
	body, err := readLimited(r.Body, s.opts.MaxBodyBytes)
	if err != nil {
		writeError(w, r, err, "")
		return
	}
	var req ToolCallsRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: "body must be an assistant message {\"tool_calls\": [{\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}]}: " + err.Error()}, "")
		return
	}
	if err := req.check(); err != nil {
		writeError(w, r, err, "")
		return
	}
	tenant := TenantFrom(r.Context())
	level, err := s.dataLevel(tenant, req.DataLevel)
	if err != nil {
		writeError(w, r, err, "")
		return
	}
	out := ToolCallsResponse{Messages: make([]ToolMessage, len(req.ToolCalls)), Results: make([]ToolCallResult, len(req.ToolCalls))}
	var wg sync.WaitGroup
	for i, tc := range req.ToolCalls {
		wg.Go(func() {
			c := &hub.Call{Tenant: tenant, Name: tc.Function.Name, Meta: hub.ClientMeta(req.Meta), DataLevel: level}
			if req.Priority == "batch" {
				c.Priority = hub.Batch
			}
			out.Messages[i], out.Results[i] = s.runToolCall(r.Context(), c, tc)
		})
	}
	wg.Wait()
	writeJSON(w, http.StatusOK, out)
}

// check refuses what no tool call of the message can run with.
func (req *ToolCallsRequest) check() error {
	bad := func(format string, a ...any) error {
		return &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf(format, a...)}
	}
	switch {
	case req.Role != "" && req.Role != "assistant":
		return bad("role %q: send the assistant message that holds the tool calls", req.Role)
	case len(req.ToolCalls) == 0:
		return bad("tool_calls is empty: send the assistant message whose tool_calls toolhub should run")
	case len(req.ToolCalls) > MaxToolCalls:
		return bad("%d tool calls in one message, over the limit of %d", len(req.ToolCalls), MaxToolCalls)
	}
	switch req.Priority {
	case "", "interactive", "batch":
	default:
		return bad("priority must be interactive or batch")
	}
	seen := map[string]bool{}
	for i, tc := range req.ToolCalls {
		switch {
		case tc.ID == "":
			return bad("tool_calls[%d] has no id: the tool message answers the call by its id", i)
		case seen[tc.ID]:
			return bad("tool_calls[%d]: id %q is used twice", i, tc.ID)
		case tc.Type != "" && tc.Type != "function":
			return bad("tool_calls[%d]: type %q: toolhub runs function tool calls", i, tc.Type)
		}
		seen[tc.ID] = true
	}
	return nil
}

// runToolCall runs one tool call and renders what the model reads: the
// structured result as JSON (or {"text": …} when the tool gave only
// content), and a failure as {"error": {"code", "message", …}}, the form
// the planner's tool loop uses too.
func (s *Server) runToolCall(ctx context.Context, c *hub.Call, tc ToolCall) (ToolMessage, ToolCallResult) {
	msg := ToolMessage{Role: "tool", ToolCallID: tc.ID}
	res := ToolCallResult{ToolCallID: tc.ID, Name: tc.Function.Name}
	fail := func(err error, callID string) (ToolMessage, ToolCallResult) {
		b := errorBody(err, callID)
		res.Error = &b
		content, _ := json.Marshal(map[string]any{"error": b})
		msg.Content = string(content)
		return msg, res
	}
	if tc.Function.Name == "" {
		return fail(&hub.Error{Code: hub.CodeUnknownTool, Message: "the tool call names no function; call one of the tools from GET /v1/tools?format=openai"}, "")
	}
	var args Arguments
	if a := bytes.TrimSpace(tc.Function.Arguments); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		if err := json.Unmarshal(a, &args); err != nil {
			return fail(&hub.Error{Code: hub.CodeInvalidArguments, Message: strings.TrimPrefix(err.Error(), "json: ")}, "")
		}
	}
	c.Arguments = args
	r, err := s.gw.Call(ctx, c)
	if err != nil {
		return fail(err, c.ID)
	}
	prov := r.Provenance
	res.Provenance, res.IsError, res.OK = &prov, r.IsError, !r.IsError
	var content []byte
	switch {
	case r.IsError:
		content, _ = json.Marshal(map[string]any{"error": map[string]any{"code": hub.CodeToolError, "message": hub.TextOf(r)}})
	case r.Structured != nil:
		content, err = json.Marshal(r.Structured)
	}
	if len(content) == 0 || err != nil {
		content, _ = json.Marshal(map[string]string{"text": hub.TextOf(r)})
	}
	if len(content) > maxToolContent {
		content, _ = json.Marshal(map[string]any{"truncated": true, "partial": string(content[:maxToolContent])})
	}
	msg.Content = string(content)
	return msg, res
}
