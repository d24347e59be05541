package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

func post(t *testing.T, url, body string, out any) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}

// TestCallAcceptsStringArguments: function.arguments as a model sends it
// (a JSON string) works on POST /v1/tools/{name}/call.
func TestCallAcceptsStringArguments(t *testing.T) {
	s, _ := newTestServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	var ok CallResponse
	if st := post(t, ts.URL+"/v1/tools/weather_current/call", `{"arguments":"{\"city\":\"Paris\"}"}`, &ok); st != 200 || !strings.Contains(toJSON(ok.Content), "sunny in Paris") {
		t.Errorf("string arguments: %d %+v", st, ok)
	}
	tests := []struct{ name, body, code, msg string }{
		{"a string without an object", `{"arguments":"[1,2]"}`, "invalid_request", "must hold a JSON object"},
		{"a string that is not JSON", `{"arguments":"{city"}`, "invalid_request", "arguments"},
		{"a string failing the schema", `{"arguments":"{\"city\":3}"}`, "invalid_arguments", "/city"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e struct{ Error ErrorBody }
			post(t, ts.URL+"/v1/tools/weather_current/call", tt.body, &e)
			if string(e.Error.Code) != tt.code || !strings.Contains(e.Error.Message+toJSON(e.Error.Details), tt.msg) {
				t.Errorf("error %+v, want %s mentioning %q", e.Error, tt.code, tt.msg)
			}
		})
	}
}

// TestToolCalls: an assistant message's tool calls in, tool messages out,
// in order, each call failing alone, provenance beside the messages.
func TestToolCalls(t *testing.T) {
	s, _ := newTestServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	body := `{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_ok","type":"function","function":{"name":"weather_current","arguments":"{\"city\":\"Paris\"}"}},
		{"id":"call_schema","type":"function","function":{"name":"weather-a__current_weather","arguments":"{\"city\":3}"}},
		{"id":"call_unknown","type":"function","function":{"name":"nope__x","arguments":"{}"}},
		{"id":"call_garbled","type":"function","function":{"name":"weather_current","arguments":"{\"city\":"}},
		{"id":"call_down","type":"function","function":{"name":"down__x","arguments":""}},
		{"id":"call_object","type":"function","function":{"name":"weather.current","arguments":{"city":"Lyon"}}}
	]}`
	var out ToolCallsResponse
	if st := post(t, ts.URL+"/v1/tool_calls", body, &out); st != 200 {
		t.Fatalf("status %d: %+v", st, out)
	}
	want := []struct{ id, code, content string }{
		{"call_ok", "", `{"temp_c":20.5}`},
		{"call_schema", "invalid_arguments", `"code":"invalid_arguments"`},
		{"call_unknown", "unknown_tool", `"code":"unknown_tool"`},
		{"call_garbled", "invalid_arguments", `"code":"invalid_arguments"`},
		{"call_down", "unavailable", `"code":"unavailable"`},
		{"call_object", "", `{"temp_c":20.5}`},
	}
	if len(out.Messages) != len(want) || len(out.Results) != len(want) {
		t.Fatalf("%d messages, %d results for %d calls", len(out.Messages), len(out.Results), len(want))
	}
	for i, w := range want {
		m, r := out.Messages[i], out.Results[i]
		if m.Role != "tool" || m.ToolCallID != w.id || r.ToolCallID != w.id || !strings.Contains(m.Content, w.content) {
			t.Errorf("message %d = %+v, want tool message for %s with %s", i, m, w.id, w.content)
		}
		if !json.Valid([]byte(m.Content)) {
			t.Errorf("message %d content is not JSON: %q", i, m.Content)
		}
		switch {
		case w.code == "" && (!r.OK || r.Provenance == nil || r.Provenance.Vendor != "weather-a" || r.Error != nil):
			t.Errorf("result %d = %+v, want ok with provenance", i, r)
		case w.code != "" && (r.OK || r.Error == nil || string(r.Error.Code) != w.code):
			t.Errorf("result %d = %+v, want error %s", i, r, w.code)
		}
	}
	// The messages are chat-completions tool messages and nothing more.
	var raw struct{ Messages []map[string]any }
	b, _ := json.Marshal(out)
	json.Unmarshal(b, &raw)
	for _, m := range raw.Messages {
		if len(m) != 3 {
			t.Errorf("tool message with fields beyond role, tool_call_id, content: %v", m)
		}
	}
}

func TestToolCallsRefusesBadMessages(t *testing.T) {
	s, _ := newTestServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	call := `{"id":"a","type":"function","function":{"name":"weather_current","arguments":"{}"}}`
	tests := []struct{ name, body, msg string }{
		{"no tool calls", `{"role":"assistant","content":"hi"}`, "tool_calls is empty"},
		{"user message", `{"role":"user","tool_calls":[` + call + `]}`, "assistant message"},
		{"no id", `{"tool_calls":[{"function":{"name":"x"}}]}`, "has no id"},
		{"same id twice", `{"tool_calls":[` + call + `,` + call + `]}`, "used twice"},
		{"unknown field", `{"tool_calls":[` + call + `],"priorty":"batch"}`, "priorty"},
		{"too many", `{"tool_calls":[` + strings.TrimSuffix(strings.Repeat(call+",", MaxToolCalls+1), ",") + `]}`, "over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e struct{ Error ErrorBody }
			if st := post(t, ts.URL+"/v1/tool_calls", tt.body, &e); st != 400 || !strings.Contains(e.Error.Message, tt.msg) {
				t.Errorf("%d %+v, want 400 mentioning %q", st, e.Error, tt.msg)
			}
		})
	}
}

// TestToolCallsRunInParallel: the vendor sees every call of a message in
// flight at once (each waits for the others).
func TestToolCallsRunInParallel(t *testing.T) {
	const n = 4
	cat := registry.NewCatalog()
	cat.SetVendorTools("slow", []registry.ToolDef{{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	ups := upstreams{"slow": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		mu.Lock()
		if arrived++; arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("together")}}, nil
		case <-time.After(30 * time.Second): // only if the calls ran one by one
			return nil, errors.New("the other calls never arrived")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	s := NewServer(hub.NewGateway(cat, ups, nil), nil)
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()
	var calls []string
	for i := range n {
		calls = append(calls, `{"id":"c`+string(rune('0'+i))+`","type":"function","function":{"name":"slow__wait","arguments":"{}"}}`)
	}
	var out ToolCallsResponse
	post(t, ts.URL+"/v1/tool_calls", `{"tool_calls":[`+strings.Join(calls, ",")+`]}`, &out)
	for i, m := range out.Messages {
		if m.Content != `{"text":"together"}` {
			t.Errorf("message %d: %q", i, m.Content)
		}
	}
}

// FuzzToolCalls: whatever the body, POST /v1/tool_calls answers JSON, never
// a server error, and one tool message per tool call.
func FuzzToolCalls(f *testing.F) {
	f.Add(`{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"weather_current","arguments":"{\"city\":\"x\"}"}}]}`)
	f.Add(`{"tool_calls":[{"id":"a","function":{"name":"nope","arguments":"{"}},{"id":"b","function":{"name":"weather.current","arguments":{"city":1}}}]}`)
	f.Add(`{"tool_calls":[]}`)
	s, _ := newTestServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/tool_calls", strings.NewReader(body))
		s.toolCalls(rec, req.WithContext(withTenant(req.Context(), DefaultTenant)))
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		var out ToolCallsResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("body is not JSON: %q", rec.Body)
		}
		if rec.Code == 200 && len(out.Messages) != len(out.Results) {
			t.Fatalf("%d messages, %d results", len(out.Messages), len(out.Results))
		}
	})
}
