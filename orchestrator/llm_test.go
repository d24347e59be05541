package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// scriptedModel is an OpenAI-compatible chat-completions server whose turns
// are scripted: turn(i, request) returns the response body for the i-th
// request (1-based), in the real wire format.
type scriptedModel struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []map[string]any
	turn func(i int, req map[string]any) (status int, body string)
}

func newScriptedModel(t testing.TB, turn func(i int, req map[string]any) (int, string)) *scriptedModel {
	m := &scriptedModel{turn: turn}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "not found", 404)
			return
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		m.mu.Lock()
		m.reqs = append(m.reqs, req)
		i := len(m.reqs)
		m.mu.Unlock()
		status, body := m.turn(i, req)
		if status == 0 {
			<-r.Context().Done() // a model that never answers
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *scriptedModel) client(t testing.TB) *Client {
	c, err := NewClient(Options{BaseURL: m.srv.URL + "/v1", Model: "test-model", APIKey: "sk-test", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (m *scriptedModel) requests() []map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]map[string]any(nil), m.reqs...)
}

// call is one scripted tool call: name and raw arguments string.
type call struct{ id, name, args string }

// toolCalls renders a chat.completion answer asking for calls.
func toolCalls(calls ...call) string {
	var tc []map[string]any
	for _, c := range calls {
		tc = append(tc, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}})
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": nil, "tool_calls": tc}, "finish_reason": "tool_calls"}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	return string(b)
}

// final renders a chat.completion final answer.
func final(text string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-2", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
	})
	return string(b)
}

// toolMessages returns the role:tool messages of a request by tool_call_id.
func toolMessages(req map[string]any) map[string]string {
	out := map[string]string{}
	for _, m := range req["messages"].([]any) {
		m := m.(map[string]any)
		if m["role"] == "tool" {
			out[m["tool_call_id"].(string)] = m["content"].(string)
		}
	}
	return out
}

func TestClientRetriesAndErrors(t *testing.T) {
	var auth []string
	var mu sync.Mutex
	script := []struct {
		status int
		body   string
		header string
	}{
		{429, `{"error":{"message":"slow down","type":"rate_limit"}}`, "0"},
		{503, `upstream sick`, ""},
		{200, final("hi"), ""},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		s := script[len(auth)-1]
		mu.Unlock()
		if s.header != "" {
			w.Header().Set("Retry-After", s.header)
		}
		w.WriteHeader(s.status)
		io.WriteString(w, s.body)
	}))
	defer srv.Close()
	c, err := NewClient(Options{BaseURL: srv.URL + "/", Model: "m", APIKey: "k", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat(t.Context(), &ChatRequest{Messages: []Message{{Role: "user", Content: "hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "hi" {
		t.Errorf("content %q", got)
	}
	if diff := cmp.Diff([]string{"Bearer k", "Bearer k", "Bearer k"}, auth); diff != "" {
		t.Errorf("attempts (-want +got)\n%s", diff)
	}

	tests := []struct {
		name, want string
		status     int
		body       string
		attempts   int
	}{
		{"4xx is not retried", `HTTP 400 invalid_model: model "m" does not exist`, 400, `{"error":{"message":"model \"m\" does not exist","type":"invalid_request_error","code":"invalid_model"}}`, 1},
		{"5xx retried then reported", "HTTP 502: bad gateway (after 3 attempts)", 502, "bad gateway", 3},
		{"no choices", "no choices", 200, `{"choices":[]}`, 1},
		{"not JSON", "bad response", 200, `<html>`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n++
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c, _ := NewClient(Options{BaseURL: srv.URL, Model: "m", Backoff: time.Millisecond})
			_, err := c.Chat(t.Context(), &ChatRequest{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
			if n != tt.attempts {
				t.Errorf("%d attempts, want %d", n, tt.attempts)
			}
		})
	}
	if _, err := NewClient(Options{Model: "m"}); err == nil || !strings.Contains(err.Error(), "base_url is required") {
		t.Errorf("no base URL: %v", err)
	}
}

func TestClientStream(t *testing.T) {
	chunks := []string{
		`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"wx__current","arguments":""}}]},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"maps__route","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	}
	var stream bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req ChatRequest
		json.NewDecoder(r.Body).Decode(&req)
		stream = req.Stream
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, ": keep-alive\n\ndata: %s\n\n", c)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	c, _ := NewClient(Options{BaseURL: srv.URL, Model: "m", Stream: true})
	resp, err := c.Chat(t.Context(), &ChatRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !stream {
		t.Error("request did not ask for a stream")
	}
	want := Choice{FinishReason: "tool_calls", Message: Message{Role: "assistant", ToolCalls: []ToolCall{
		{ID: "call_a", Type: "function", Function: FunctionCall{Name: "wx__current", Arguments: `{"city":"Paris"}`}},
		{ID: "call_b", Type: "function", Function: FunctionCall{Name: "maps__route", Arguments: `{}`}},
	}}}
	if diff := cmp.Diff(want, resp.Choices[0]); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestClientCancel(t *testing.T) {
	m := newScriptedModel(t, func(int, map[string]any) (int, string) { return 0, "" })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { _, err := m.client(t).Chat(ctx, &ChatRequest{}); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}
