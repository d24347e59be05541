package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/jobs"
)

// TestFinalToolError: a vendor's tool error marked final (_meta
// "toolhub/final": true) is the capability's answer — not a reason to
// fall back, answer stale or queue — and a queued job that meets one fails
// at once, after one run (it used to be an upstream_error like any other:
// the call was queued and its job retried until its deadline).
func TestFinalToolError(t *testing.T) {
	var calls atomic.Int32
	var down atomic.Bool
	srv := server.NewMCPServer("strict", "1.0.0")
	srv.AddTool(mcp.NewTool("draw", mcp.WithString("prompt", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls.Add(1)
		res := mcp.NewToolResultError("the prompt breaks the content policy")
		res.Meta = mcp.NewMetaFromMap(map[string]any{hub.MetaFinal: true})
		return res, nil
	})
	inner := server.NewStreamableHTTPServer(srv)
	vsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer vsrv.Close()
	cfg := parse(t, `
data: `+t.TempDir()+`
outbound: {allow: ["`+strings.TrimPrefix(vsrv.URL, "http://")+`"]}
vendors:
  - {id: strict, mcp: {transport: http, url: "`+vsrv.URL+`/mcp"}, probe: {disabled: true}}
capabilities:
  - name: image.generate
    input_schema: {type: object, required: [prompt], properties: {prompt: {type: string}}}
    chain:
      - tool: strict/draw
fallback:
  capabilities: {image.generate: {queue: true}}
`)
	a, err := New(t.Context(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	waitTools(t, a, "strict", true)
	call := func() (*hub.Result, error) {
		return a.Gateway.Call(t.Context(), &hub.Call{Tenant: "default", Name: "image.generate", Arguments: map[string]any{"prompt": "forbidden"}})
	}

	// Synchronously: the tool's error is the answer.
	res, err := call()
	if err != nil {
		t.Fatalf("call: %v, want the tool's error as the answer", err)
	}
	if !res.IsError || !res.Final || res.Provenance.Queued || res.Provenance.Stale || res.Provenance.Vendor != "strict" {
		t.Errorf("answer: isError %v, final %v, provenance %+v; want the vendor's final tool error", res.IsError, res.Final, res.Provenance)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the vendor was called %d times, want 1", n)
	}

	// As a job: queued while the vendor is down, run when it is back, and
	// failed at its first run.
	down.Store(true)
	res, err = call()
	if err != nil || !res.Provenance.Queued {
		t.Fatalf("call while the vendor is down: %v, %+v; want queued", err, res)
	}
	id := res.Provenance.JobID
	down.Store(false)
	calls.Store(0)
	if _, err := a.pool.Wake(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var runs int
	for {
		evs, err := a.Jobs.Events(t.Context(), "", 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		runs = 0
		var last jobs.Status
		for _, e := range evs {
			if e.JobID != id {
				continue
			}
			if e.Status == jobs.Running {
				runs++
			}
			last = e.Status
		}
		if last.Final() || runs > 1 || (runs == 1 && last == jobs.Queued) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %d runs, last status %s", id, runs, last)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
	j, err := a.Jobs.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != jobs.Failed || j.Attempts != 1 || !strings.Contains(j.LastError, "content policy") {
		t.Errorf("job: %s after %d attempts (%d runs), last error %q; want failed at its first run with the tool's error", j.Status, j.Attempts, runs, j.LastError)
	}
}
