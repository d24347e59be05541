package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/config"
)

// tourSteps returns the shell lines of the README's five-minute tour.
func tourSteps(t *testing.T) []string {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "## A five-minute tour")
	if start < 0 {
		t.Fatal("README has no five-minute tour")
	}
	s = s[start:]
	if end := strings.Index(s[3:], "\n## "); end > 0 {
		s = s[:end+3]
	}
	var lines []string
	in := false
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(l, "```sh"):
			in = true
		case strings.HasPrefix(l, "```"):
			in = false
		case in && strings.TrimSpace(l) != "":
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}

// words splits a shell line the way the README writes them: words, and
// 'single-' and "double-quoted" strings (no escapes); it stops at a pipe
// or a comment.
func words(line string) (args []string, comment string) {
	if i := strings.Index(line, " #"); i >= 0 {
		line, comment = line[:i], strings.TrimSpace(line[i+2:])
	}
	if i := strings.Index(line, " | "); i >= 0 {
		line = line[:i]
	}
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if q := line[0]; q == '\'' || q == '"' {
			end := strings.IndexByte(line[1:], q)
			if end < 0 { // continued on the next line
				return append(args, line[1:]), comment
			}
			args, line = append(args, line[1:end+1]), line[end+2:]
			continue
		}
		end := strings.IndexAny(line, " ")
		if end < 0 {
			end = len(line)
		}
		args, line = append(args, line[:end]), line[end:]
	}
	return args, comment
}

var vendorComment = regexp.MustCompile(`vendor ([a-z0-9-]+)`)

// TestReadmeTour runs the tour's call and vendor-control steps as the
// README writes them, against `toolhub serve` on the embedded default
// config (its example vendors on a free port), and checks each answer
// against what the README says it is.
func TestReadmeTour(t *testing.T) {
	addr, _ := serveVendors(t, vendors.Names()...)
	cfg := string(config.DefaultYAML())
	cfg = strings.Replace(cfg, "examples:\n  addr: 127.0.0.1:9100\n", "", 1)
	cfg = strings.ReplaceAll(cfg, "127.0.0.1:9100", addr)
	cfg = strings.Replace(cfg, "addr: 127.0.0.1:8080", "addr: 127.0.0.1:0", 1)
	h := startHub(t, cfg, "", "weather-a", "weather-b")
	ran := 0
	for _, line := range tourSteps(t) {
		args, comment := words(line)
		switch {
		case len(args) > 2 && args[0] == "./bin/toolhub" && args[1] == "call":
			ran++
			out, errOut, code := th(t, nil, append(args[1:], "--hub", h.URL())...)
			if strings.HasPrefix(comment, "invalid_arguments") || strings.HasPrefix(comment, "unknown_tool") {
				code := strings.Trim(strings.Fields(comment)[0], ",;.")
				if !strings.Contains(errOut, code) {
					t.Errorf("%s\nwant %s, got: %s %s", line, code, out, errOut)
				}
				continue
			}
			if code != 0 {
				t.Errorf("%s\nexit %d: %s", line, code, errOut)
				continue
			}
			var res struct {
				Provenance struct {
					Vendor           string
					Fallback, Cached bool
				}
			}
			json.Unmarshal([]byte(out), &res)
			if m := vendorComment.FindStringSubmatch(comment); m != nil && res.Provenance.Vendor != m[1] {
				t.Errorf("%s\nanswered by %q (cached %v), the README says %s", line, res.Provenance.Vendor, res.Provenance.Cached, m[1])
			}
			if strings.Contains(comment, "fallback true") && !res.Provenance.Fallback {
				t.Errorf("%s\nnot a fallback: %s", line, out)
			}
		case len(args) > 2 && args[0] == "./bin/toolhub" && args[1] == "plan":
			ran++
			// --hub without a scheme, as people type it.
			out, errOut, code := th(t, nil, append(args[1:], "--hub", strings.TrimPrefix(h.URL(), "http://"))...)
			if code != 0 {
				t.Errorf("%s\nexit %d: %s %s", line, code, out, errOut)
			}
		case len(args) > 3 && args[0] == "curl" && strings.Contains(line, "/_control"):
			ran++
			var url, body string
			for i, a := range args {
				if strings.HasPrefix(a, "127.0.0.1:9100") {
					url = "http://" + strings.Replace(a, "127.0.0.1:9100", addr, 1)
				}
				if a == "-d" && i+1 < len(args) {
					body = args[i+1]
				}
			}
			resp, err := http.Post(url, "application/json", strings.NewReader(body))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%s: %v %v", line, err, resp)
			}
			resp.Body.Close()
		}
	}
	if ran < 5 {
		t.Fatalf("only %d tour steps found", ran)
	}
	toolCallsExample(t, h.URL())
}

// toolCallsExample posts the README's /v1/tool_calls example body and
// checks that both tool messages answer.
func toolCallsExample(t *testing.T, hub string) {
	b, _ := os.ReadFile("../../README.md")
	s := string(b)
	i := strings.Index(s, "curl -s 127.0.0.1:8080/v1/tool_calls ")
	if i < 0 {
		t.Fatal("README has no /v1/tool_calls example")
	}
	s = s[i:]
	// What curl sends: -d without a Content-Type header is a form.
	ctype := "application/x-www-form-urlencoded"
	if head := s[:strings.Index(s, " -d '")]; strings.Contains(head, "-H 'Content-Type: application/json'") {
		ctype = "application/json"
	}
	s = s[strings.Index(s, " -d '")+len(" -d '"):]
	body := s[:strings.Index(s, "'")] // single-quoted in the shell: JSON as it is
	resp, err := http.Post(hub+"/v1/tool_calls", ctype, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Messages []struct{ Role, ToolCallID, Content string } `json:"messages"`
		Results  []struct {
			OK         bool `json:"ok"`
			Provenance struct{ Vendor string }
		} `json:"results"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != 200 || len(out.Messages) != 2 || len(out.Results) != 2 {
		t.Fatalf("README tool_calls example: %d %+v\nbody: %s", resp.StatusCode, out, body)
	}
	for i, want := range []string{"temp_c", "distance_km"} {
		if !out.Results[i].OK || !strings.Contains(out.Messages[i].Content, want) {
			t.Errorf("tool message %d: %+v %+v", i, out.Messages[i], out.Results[i])
		}
	}
}

// TestMCPErrorsCarryData: over MCP, an unknown tool and arguments that
// fail the schema are JSON-RPC -32602 errors whose data is the error
// object the README describes; a capability answers to both its names.
func TestMCPErrorsCarryData(t *testing.T) {
	addr, _ := serveVendors(t, vendors.WeatherA)
	h := startHub(t, `
addr: 127.0.0.1:0
outbound: {allow: ["`+addr+`"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: http://`+addr+`/weather-a/mcp}
capabilities:
  - name: weather.current
    input_schema: {type: object, required: [city], properties: {city: {type: string}}}
    chain: [{tool: weather-a/current_weather}]
`, "", "weather-a")
	session := ""
	rpc := func(body string) map[string]any {
		req, _ := http.NewRequest("POST", h.URL()+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			session = s
		}
		b, _ := io.ReadAll(resp.Body)
		if i := bytes.Index(b, []byte("data: ")); i >= 0 && bytes.HasPrefix(bytes.TrimSpace(b), []byte("event:")) {
			b = b[i+6:]
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	rpc(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	rpc(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tc := range []struct{ name, args, code string }{
		{"nope__x", `{}`, "unknown_tool"},
		{"weather.current", `{"city":7}`, "invalid_arguments"},
		{"weather_current", `{}`, "invalid_arguments"},
	} {
		m := rpc(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tc.name + `","arguments":` + tc.args + `}}`)
		e, _ := m["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		if e["code"] != -32602.0 || data["code"] != tc.code || data["message"] == "" {
			t.Errorf("tools/call %s %s: %v; want -32602 with data.code %s", tc.name, tc.args, m, tc.code)
		}
	}
	for _, name := range []string{"weather.current", "weather_current"} {
		m := rpc(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + name + `","arguments":{"city":"Paris"}}}`)
		if res, _ := m["result"].(map[string]any); res == nil || res["isError"] == true {
			t.Errorf("tools/call %s: %v", name, m)
		}
	}
}
