// Package interop runs toolhub against real peers from the npm registry
// (pinned in test/peers): @modelcontextprotocol/server-everything as a stdio
// vendor, and the official MCP TypeScript SDK client; the official Go SDK
// is a second client. `make test` installs the peers into .cache/peers.
package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/test/harness"
)

// peers returns the folder with the installed npm peers.
func peers(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TOOLHUB_PEERS")
	if dir == "" {
		dir = "../../.cache/peers"
	}
	dir, _ = filepath.Abs(dir)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")); err != nil {
		t.Fatalf("npm peers are not installed in %s (run `make peers`): %v", dir, err)
	}
	// The scripted client must sit next to node_modules to resolve the SDK.
	src, err := os.ReadFile("../peers/mcp-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcp-client.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startHub runs toolhub in process with server-everything as a stdio
// vendor, and extra config (YAML lines at the top level), and waits until
// the vendor is ready.
func startHub(t *testing.T, peerDir string, extra ...string) *harness.InProcess {
	t.Helper()
	return harness.StartInProcess(t, harness.ParseConfig(t, `
addr: 127.0.0.1:0
data: {{data}}
vendors:
  - id: everything
    mcp: {transport: stdio, command: {{command}}}
    timeout: 20s
`+strings.Join(extra, "\n"), "{{data}}", t.TempDir(), "{{command}}", filepath.Join(peerDir, "node_modules", ".bin", "mcp-server-everything")), nil, "everything")
}

type event struct {
	Event   string          `json:"event"`
	Names   []string        `json:"names"`
	Name    string          `json:"name"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcErr         `json:"error"`
	Message string          `json:"message"`
}

type rpcErr struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

type callSpec struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// runTSClient runs the TypeScript SDK client; onReady runs when the client
// waits for notifications/tools/list_changed.
func runTSClient(t *testing.T, peerDir, url string, calls []callSpec, onReady func()) []event {
	t.Helper()
	var events []event
	runTSLines(t, peerDir, map[string]any{"url": url, "calls": calls, "waitListChanged": onReady != nil}, 2*time.Minute, func(b []byte) {
		var e event
		_ = json.Unmarshal(b, &e) // runTSLines has read it as JSON
		if e.Event == "ready" && onReady != nil {
			onReady()
		}
		events = append(events, e)
	})
	return events
}

// runTSLines runs the scripted TypeScript SDK client with spec for at most
// timeout and hands each line it prints, a JSON object, to line; a line
// that is not JSON, a {"event": "fatal"} line or a failed exit fails the
// test.
func runTSLines(t *testing.T, peerDir string, spec any, timeout time.Duration, line func([]byte)) {
	t.Helper()
	b, _ := json.Marshal(spec)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(peerDir, "mcp-client.mjs"), string(b))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var head struct {
			Event   string `json:"event"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
			t.Fatalf("client printed %q", sc.Text())
		}
		if head.Event == "fatal" {
			t.Fatalf("TypeScript client: %s", head.Message)
		}
		line(sc.Bytes())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("TypeScript client: %v", err)
	}
}

type toolResult struct {
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"content"`
	IsError bool           `json:"isError"`
	Meta    map[string]any `json:"_meta"`
}

func callResult(t *testing.T, events []event, name string) (toolResult, *rpcErr) {
	t.Helper()
	for _, e := range events {
		if e.Event == "call" && e.Name == name {
			var r toolResult
			if e.Error != nil {
				return r, e.Error
			}
			if err := json.Unmarshal(e.Result, &r); err != nil {
				t.Fatal(err)
			}
			return r, nil
		}
	}
	t.Fatalf("no call event for %s", name)
	return toolResult{}, nil
}

func TestTypeScriptClientThroughHub(t *testing.T) {
	dir := peers(t)
	h := startHub(t, dir)
	events := runTSClient(t, dir, h.URL+"/mcp", []callSpec{
		{Name: "everything__echo", Arguments: map[string]any{"message": "hello hub"}},
		{Name: "everything__get-tiny-image"},
		{Name: "everything__gzip-file-as-resource", Arguments: map[string]any{"data": "data:text/plain;base64,aGVsbG8=", "outputType": "resource"}},
		{Name: "everything__gzip-file-as-resource", Arguments: map[string]any{"data": "ftp://nowhere/x"}},
		{Name: "everything__echo", Arguments: map[string]any{"message": 42}},
		{Name: "nope__missing"},
	}, nil)
	var names []string
	for _, e := range events {
		if e.Event == "tools" {
			names = e.Names
		}
	}
	for _, want := range []string{"everything__echo", "everything__get-tiny-image", "everything__get-sum"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}

	echo, rerr := callResult(t, events, "everything__echo")
	if rerr != nil || echo.IsError || len(echo.Content) != 1 || !strings.Contains(echo.Content[0].Text, "hello hub") {
		t.Errorf("echo = %+v, %+v", echo, rerr)
	}
	if prov, _ := echo.Meta["toolhub/provenance"].(map[string]any); prov["vendor"] != "everything" {
		t.Errorf("echo provenance = %v", echo.Meta)
	}
	img, _ := callResult(t, events, "everything__get-tiny-image")
	var sawImage bool
	for _, c := range img.Content {
		if c.Type == "image" && c.MimeType == "image/png" && len(c.Data) > 100 {
			sawImage = true
		}
	}
	if !sawImage {
		t.Errorf("image result did not pass through: %+v", img)
	}
	// The second gzip call has a URL the vendor refuses: a tool error from
	// the vendor, passed through unchanged as isError.
	var gz []toolResult
	for _, e := range events {
		if e.Event == "call" && e.Name == "everything__gzip-file-as-resource" {
			var r toolResult
			_ = json.Unmarshal(e.Result, &r)
			gz = append(gz, r)
		}
	}
	if len(gz) != 2 || gz[0].IsError || len(gz[0].Content) == 0 || gz[0].Content[0].Type != "resource" || !gz[1].IsError {
		t.Errorf("gzip results = %+v", gz)
	}
	// Arguments failing the schema and unknown tools are JSON-RPC -32602.
	var bad []*rpcErr
	for _, e := range events {
		if e.Event == "call" && (e.Name == "nope__missing" || e.Name == "everything__echo" && e.Error != nil) {
			bad = append(bad, e.Error)
		}
	}
	if len(bad) != 2 {
		t.Fatalf("want 2 protocol errors, got %+v", bad)
	}
	for _, e := range bad {
		if e == nil || e.Code != -32602 || e.Data["code"] == nil {
			t.Errorf("protocol error = %+v, want -32602 with a code in data", e)
		}
	}
}

func TestTypeScriptClientOnVendorPathAndListChanged(t *testing.T) {
	dir := peers(t)
	h := startHub(t, dir)
	events := runTSClient(t, dir, h.URL+"/mcp/vendors/everything", []callSpec{
		{Name: "echo", Arguments: map[string]any{"message": "direct name"}},
	}, func() {
		// A vendor's tools change while the client is connected.
		defs := []registry.ToolDef{}
		for _, tl := range h.Catalog.VendorTools("everything") {
			if tl.Def.Name != "get-sum" {
				defs = append(defs, tl.Def)
			}
		}
		h.Catalog.SetVendorTools("everything", defs)
	})
	echo, rerr := callResult(t, events, "echo")
	if rerr != nil || echo.IsError || !strings.Contains(echo.Content[0].Text, "direct name") {
		t.Errorf("echo on the vendor path = %+v, %+v", echo, rerr)
	}
	var before, after []string
	for _, e := range events {
		switch e.Event {
		case "tools":
			before = e.Names
		case "list_changed":
			after = e.Names
		}
	}
	if !slices.Contains(before, "get-sum") || slices.Contains(after, "get-sum") || len(after) != len(before)-1 {
		t.Errorf("tools before %v, after list_changed %v", before, after)
	}
}

func TestGoSDKClient(t *testing.T) {
	dir := peers(t)
	h := startHub(t, dir)
	ctx := t.Context()
	c := gomcp.NewClient(&gomcp.Implementation{Name: "go-sdk-interop", Version: "1.0.0"}, nil)
	s, err := c.Connect(ctx, &gomcp.StreamableClientTransport{Endpoint: h.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lr, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(lr.Tools, func(tl *gomcp.Tool) bool { return tl.Name == "everything__get-sum" }) {
		t.Fatalf("get-sum not listed")
	}
	res, err := s.CallTool(ctx, &gomcp.CallToolParams{Name: "everything__get-sum", Arguments: map[string]any{"a": 2, "b": 40}})
	if err != nil {
		t.Fatal(err)
	}
	txt, ok := res.Content[0].(*gomcp.TextContent)
	if res.IsError || !ok || !strings.Contains(txt.Text, "42") {
		t.Errorf("get-sum = %+v", res)
	}
	_, err = s.CallTool(ctx, &gomcp.CallToolParams{Name: "everything__get-sum", Arguments: map[string]any{"a": "two"}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != -32602 || !strings.Contains(string(we.Data), "invalid_arguments") {
		t.Errorf("bad arguments: err = %#v, want -32602 with invalid_arguments in data", err)
	}
}

func TestKilledStdioVendorIsRestarted(t *testing.T) {
	dir := peers(t)
	h := startHub(t, dir)
	st := h.Manager.Status("everything")
	if st.PID == 0 {
		t.Fatalf("no pid in status %+v", st)
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	after := h.AwaitVendor(t, "everything", st.Restarts+1)
	if after.PID == st.PID {
		t.Fatalf("same pid after restart: %+v", after)
	}
	res, err := h.Gateway.Call(t.Context(), callOf("everything__echo", map[string]any{"message": "back"}))
	if err != nil || res.IsError {
		t.Fatalf("call after restart: %v %+v", err, res)
	}
}
