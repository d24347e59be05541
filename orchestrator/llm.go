package orchestrator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolhub/toolhub/registry"
)

// Model answers chat-completion requests. [*Client] implements it over
// HTTP; tests may script one.
type Model interface {
	Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error)
}

// Message is one chat message in the OpenAI chat-completions format.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // assistant
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool
}

// ToolCall is a model's request to call a function.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments as the model
// wrote them: a JSON string that may be malformed.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatRequest is a chat-completions request. Model is filled from
// [Options.Model] when empty.
type ChatRequest struct {
	Model          string                  `json:"model"`
	Messages       []Message               `json:"messages"`
	Tools          []registry.FunctionTool `json:"tools,omitempty"`
	ToolChoice     string                  `json:"tool_choice,omitempty"` // "auto", "none", "required"
	ResponseFormat *ResponseFormat         `json:"response_format,omitempty"`
	Temperature    *float64                `json:"temperature,omitempty"`
	Stream         bool                    `json:"stream,omitempty"`
}

// ResponseFormat asks for JSON output ({"type": "json_object"}).
type ResponseFormat struct {
	Type string `json:"type"`
}

// ChatResponse is a chat-completions answer.
type ChatResponse struct {
	ID      string   `json:"id"`
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage,omitempty"`
}

// Choice is one of a response's choices; the planner reads the first.
type Choice struct {
	Index        int     `json:"index"`
	Message      Message `json:"message"`
	FinishReason string  `json:"finish_reason"` // stop, tool_calls, length, content_filter
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Options configure a [Client]. Zero fields mean the defaults.
type Options struct {
	// BaseURL of an OpenAI-compatible API, e.g. "https://api.openai.com/v1"
	// or "http://127.0.0.1:11434/v1"; requests go to BaseURL+"/chat/completions".
	// Required.
	BaseURL string `yaml:"base_url" json:"base_url"`
	// Model name sent with every request. Required.
	Model string `yaml:"model" json:"model"`
	// APIKey, sent as a bearer token; empty sends none. The caller reads it
	// (cmd reads TOOLHUB_LLM_API_KEY); it is never read from config files.
	APIKey string `yaml:"-" json:"-"`
	// Timeout bounds one HTTP attempt; zero means 60s.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// Retries after a 429, a 5xx or a network error; zero means 2, negative none.
	Retries int `yaml:"retries" json:"retries"`
	// Backoff before the first retry, doubled each time (capped at 8x) unless
	// the server sends Retry-After; zero means 500ms.
	Backoff time.Duration `yaml:"backoff" json:"backoff"`
	// Stream asks for server-sent events and accumulates the deltas.
	Stream bool `yaml:"stream" json:"stream"`
	// HTTPClient; nil means a client without its own timeout (Timeout applies).
	HTTPClient *http.Client `yaml:"-" json:"-"`
}

// Client talks to an OpenAI-compatible chat-completions endpoint.
type Client struct {
	o Options
}

var _ Model = (*Client)(nil)

// NewClient checks o and returns a client.
func NewClient(o Options) (*Client, error) {
	if o.BaseURL == "" {
		return nil, errors.New("orchestrator: llm: base_url is required (e.g. https://api.openai.com/v1)")
	}
	if o.Model == "" {
		return nil, errors.New("orchestrator: llm: model is required")
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Retries == 0 {
		o.Retries = 2
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	return &Client{o: o}, nil
}

// APIError is an error answer of the LLM endpoint.
type APIError struct {
	Status     int
	Message    string // the server's error.message, or the body
	Type, Code string // the server's error.type and error.code, if any
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("orchestrator: llm: HTTP %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Temporary reports whether retrying may help (429, 5xx).
func (e *APIError) Temporary() bool { return e.Status == http.StatusTooManyRequests || e.Status >= 500 }

// Chat sends req, retrying 429s, 5xx and network errors with backoff.
func (c *Client) Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error) {
	r := *req
	if r.Model == "" {
		r.Model = c.o.Model
	}
	r.Stream = r.Stream || c.o.Stream
	body, err := json.Marshal(&r)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: llm: encode request: %w", err)
	}
	var last error
	for attempt := 0; ; attempt++ {
		resp, err := c.once(ctx, body, r.Stream)
		if err == nil {
			return resp, nil
		}
		last = err
		var ae *APIError
		retryable := errors.As(err, &ae) && ae.Temporary() || !errors.As(err, &ae) && ctx.Err() == nil && !errors.Is(err, errBadResponse)
		if !retryable || attempt >= c.o.Retries {
			if attempt > 0 {
				return nil, fmt.Errorf("%w (after %d attempts)", last, attempt+1)
			}
			return nil, last
		}
		wait := c.o.Backoff << min(attempt, 3)
		if ae != nil && ae.RetryAfter > 0 {
			wait = ae.RetryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("orchestrator: llm: %w while waiting to retry after: %v", ctx.Err(), last)
		case <-t.C:
		}
	}
}

var errBadResponse = errors.New("orchestrator: llm: bad response")

func (c *Client) once(ctx context.Context, body []byte, stream bool) (*ChatResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.o.BaseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("orchestrator: llm: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	if c.o.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.o.APIKey)
	}
	resp, err := c.o.HTTPClient.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: llm: %s: %w", c.o.BaseURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		ae := &APIError{Status: resp.StatusCode, Message: strings.TrimSpace(string(b))}
		var eb struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &eb) == nil && eb.Error.Message != "" {
			ae.Message, ae.Type = eb.Error.Message, eb.Error.Type
			if eb.Error.Code != nil {
				ae.Code = fmt.Sprint(eb.Error.Code)
			}
		}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			ae.RetryAfter = time.Duration(s) * time.Second
		}
		return nil, ae
	}
	var out *ChatResponse
	if stream && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		out, err = readStream(resp.Body)
	} else {
		out = new(ChatResponse)
		err = json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("orchestrator: llm: reading the answer: %w", ctx.Err())
		}
		return nil, fmt.Errorf("%w: %v", errBadResponse, err)
	}
	if len(out.Choices) == 0 {
		return nil, fmt.Errorf("%w: no choices in the answer", errBadResponse)
	}
	return out, nil
}

// readStream accumulates chat-completion chunks (SSE "data:" lines, ending
// with "data: [DONE]"): content is concatenated, tool calls are assembled by
// their index (id and name from the first delta, arguments appended).
func readStream(r io.Reader) (*ChatResponse, error) {
	type chunk struct {
		ID      string `json:"id"`
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Role      string `json:"role"`
				Content   string `json:"content"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *Usage `json:"usage"`
	}
	out := &ChatResponse{Choices: []Choice{{Message: Message{Role: "assistant"}}}}
	ch := &out.Choices[0]
	var content strings.Builder
	calls := map[int]*ToolCall{}
	var order []int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	done := false
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // comments, event names, ids, blank separators
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			done = true
			break
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return nil, fmt.Errorf("stream chunk %q: %v", data, err)
		}
		if c.ID != "" {
			out.ID = c.ID
		}
		if c.Usage != nil {
			out.Usage = c.Usage
		}
		for _, cc := range c.Choices {
			if cc.Index != 0 {
				continue
			}
			content.WriteString(cc.Delta.Content)
			for _, d := range cc.Delta.ToolCalls {
				tc := calls[d.Index]
				if tc == nil {
					tc = &ToolCall{Type: "function"}
					calls[d.Index] = tc
					order = append(order, d.Index)
				}
				if d.ID != "" {
					tc.ID = d.ID
				}
				if d.Function.Name != "" {
					tc.Function.Name += d.Function.Name
				}
				tc.Function.Arguments += d.Function.Arguments
			}
			if cc.FinishReason != nil {
				ch.FinishReason = *cc.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !done && ch.FinishReason == "" {
		return nil, errors.New("stream ended before [DONE]")
	}
	ch.Message.Content = content.String()
	for _, i := range order {
		ch.Message.ToolCalls = append(ch.Message.ToolCalls, *calls[i])
	}
	return out, nil
}
