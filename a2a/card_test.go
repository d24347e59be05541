package a2a

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

const goodCard = `{"name":"A","supportedInterfaces":[{"url":"http://127.0.0.1:1/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"description":"d","version":"1",
"skills":[{"id":"s","name":"S","description":"does s","tags":[],"examples":["one","two"]}]}`

func TestParseCard(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // in the error; "" means valid
	}{
		{"valid 1.0", goodCard, ""},
		{"valid 0.3 without preferredTransport", `{"name":"A","url":"http://127.0.0.1:1/","protocolVersion":"0.3.0","skills":[{"id":"s","name":"S"}]}`, ""},
		{"bad JSON", `{"name":`, "not valid JSON"},
		{"HTML", `<html>hi</html>`, "not a JSON object"},
		{"missing name", strings.Replace(goodCard, `"name":"A"`, `"name":""`, 1), "name is missing"},
		{"missing url", `{"name":"A","skills":[{"id":"s"}]}`, "url is missing"},
		{"bad url", strings.Replace(goodCard, `http://127.0.0.1:1/a2a`, `ftp://x`, 1), "is not an http(s) URL"},
		{"missing skills", strings.Replace(goodCard, `"skills":[{"id":"s","name":"S","description":"does s","tags":[],"examples":["one","two"]}]`, `"skills":[]`, 1), "skills are missing"},
		{"skill without id", strings.Replace(goodCard, `"id":"s"`, `"id":""`, 1), "has no id"},
		{"grpc only", strings.Replace(goodCard, `"JSONRPC"`, `"GRPC"`, 1), "no interface toolhub can use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card, err := ParseCard([]byte(tt.body))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if pickInterface(card) == nil {
					t.Fatalf("no interface picked from %+v", card.SupportedInterfaces)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestParseCard03Interface(t *testing.T) {
	card, err := ParseCard([]byte(`{"name":"A","url":"http://127.0.0.1:1/rpc","protocolVersion":"0.3.0","skills":[{"id":"s","name":"S"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	in := pickInterface(card)
	if in.URL != "http://127.0.0.1:1/rpc" || in.ProtocolBinding != sdk.TransportProtocolJSONRPC || !isV03(in.ProtocolVersion) {
		t.Fatalf("interface = %+v", in)
	}
}

func TestFetchCardErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/html/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html></html>"))
	})
	mux.HandleFunc("/ok/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("A2A-Version") != "1.0" {
			http.Error(w, "want A2A-Version", 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(goodCard))
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	ctx := context.Background()
	if _, err := FetchCard(ctx, nil, ts.URL+"/ok/.well-known/agent-card.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := FetchCard(ctx, nil, ts.URL+"/html/.well-known/agent-card.json"); err == nil || !strings.Contains(err.Error(), `content type is "text/html"`) {
		t.Errorf("html: %v", err)
	}
	_, err := FetchCard(ctx, nil, ts.URL+"/nope.json")
	var ce *CardError
	if !errors.As(err, &ce) || ce.Status != 404 {
		t.Errorf("404: %v", err)
	}
	ts2 := httptest.NewServer(http.NotFoundHandler())
	url2 := ts2.URL
	ts2.Close()
	if _, err := FetchCard(ctx, nil, url2); err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("closed port: %v", err)
	}
}

func TestSkillTools(t *testing.T) {
	card, err := ParseCard([]byte(goodCard))
	if err != nil {
		t.Fatal(err)
	}
	defs := SkillTools(card)
	if len(defs) != 1 || defs[0].Name != "s" || defs[0].Title != "S" || defs[0].Description != "does s\n\nExamples: one; two" {
		t.Fatalf("defs = %+v", defs)
	}
	tool, err := registry.NewTool("v", defs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := tool.ValidateInput(map[string]any{"text": "hi"}); err != nil {
		t.Error(err)
	}
	if err := tool.ValidateInput(map[string]any{"data": map[string]any{}}); err == nil {
		t.Error("a text-only skill took data")
	}
}

func TestInputSchema(t *testing.T) {
	tests := []struct {
		modes []string
		ok    []map[string]any
		bad   []map[string]any
	}{
		{[]string{"text/plain"}, []map[string]any{{"text": "a"}}, []map[string]any{{}, {"data": map[string]any{}}}},
		{[]string{"application/json"}, []map[string]any{{"data": map[string]any{"x": 1}}}, []map[string]any{{"text": "a"}, {"data": "x"}}},
		{[]string{"text/plain", "application/json"}, []map[string]any{{"text": "a"}, {"data": map[string]any{}}, {"text": "a", "data": map[string]any{}}}, []map[string]any{{}}},
		{[]string{"image/png"}, []map[string]any{{"text": "a"}, {"data": map[string]any{}}}, []map[string]any{{"other": 1}}},
	}
	for _, tt := range tests {
		s, err := registry.CompileSchema(InputSchema(tt.modes))
		if err != nil {
			t.Fatalf("%v: %v", tt.modes, err)
		}
		for _, v := range tt.ok {
			if err := s.Validate(v); err != nil {
				t.Errorf("%v: %v rejected: %v", tt.modes, v, err)
			}
		}
		for _, v := range tt.bad {
			if err := s.Validate(v); err == nil {
				t.Errorf("%v: %v accepted", tt.modes, v)
			}
		}
	}
}

func TestResultFromParts(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G'}
	r := resultFromParts([]*sdk.Part{
		sdk.NewTextPart("hello"),
		sdk.NewDataPart(map[string]any{"a": 1.0}),
		{Content: sdk.Raw(png), MediaType: "image/png"},
		{Content: sdk.Raw([]byte("pdf")), MediaType: "application/pdf", Filename: "x.pdf"},
		{Content: sdk.URL("https://e.invalid/f.png"), MediaType: "image/png", Filename: "f.png"},
	})
	want := []mcp.Content{
		mcp.NewTextContent("hello"),
		mcp.NewTextContent(`{"a":1}`),
		mcp.NewImageContent(base64.StdEncoding.EncodeToString(png), "image/png"),
		mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: "a2a:file/x.pdf", MIMEType: "application/pdf", Blob: base64.StdEncoding.EncodeToString([]byte("pdf"))}),
		mcp.NewResourceLink("https://e.invalid/f.png", "f.png", "", "image/png"),
	}
	if d := cmp.Diff(want, r.Content); d != "" {
		t.Errorf("content (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"a": 1.0}, r.Structured); d != "" {
		t.Errorf("structured: %s", d)
	}
	if r := resultFromParts([]*sdk.Part{sdk.NewDataPart([]any{1.0}), sdk.NewDataPart("x")}); !cmp.Equal(r.Structured, map[string]any{"data": []any{[]any{1.0}, "x"}}) {
		t.Errorf("two data parts: %v", r.Structured)
	}
	// And back: structured content is one data part; its JSON text is not repeated.
	parts := partsFromResult(&hub.Result{Content: []mcp.Content{mcp.NewTextContent(`{"a":1}`), mcp.NewTextContent("note")}, Structured: map[string]any{"a": 1.0}})
	b, _ := json.Marshal(parts)
	if string(b) != `[{"data":{"a":1},"mediaType":"application/json"},{"text":"note","mediaType":"text/plain"}]` {
		t.Errorf("parts = %s", b)
	}
}

// Issue 28, leftovers: an agent card is read no further than its bound: a
// card of endless bytes fails at MaxCardBytes, and the hub reads little
// more than that of it (its socket's buffers), not the card.
func TestFetchCardStopsReading(t *testing.T) {
	var sent atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(`{"name":"` + strings.Repeat("n", 32<<10))
		for range 1024 { // 32 MiB
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
			chunk = chunk[:cap(chunk)]
			for i := range chunk {
				chunk[i] = 'n'
			}
		}
	}))
	ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && s == http.StateNew {
			_ = tc.SetWriteBuffer(16 << 10)
		}
	}
	ts.Start()
	defer ts.Close()
	_, err := FetchCard(t.Context(), ts.Client(), ts.URL)
	if err == nil || !strings.Contains(err.Error(), "over 1048576 bytes") {
		t.Fatalf("err = %v; want the card over 1048576 bytes", err)
	}
	ts.CloseClientConnections()
	// The rest is the sockets' buffers (the kernel keeps a few MiB of a
	// fast reader's data at most).
	if got := sent.Load(); got > MaxCardBytes+8<<20 {
		t.Errorf("the agent's socket took %d bytes of the card; want at most %d", got, MaxCardBytes+8<<20)
	}
}
