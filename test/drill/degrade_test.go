package drill_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/drill"
)

// TestImageChainDegradesToStaleThenQueue walks the "doubao → sd → cache →
// queue" chain with the example image vendors through a whole hub.
func TestImageChainDegradesToStaleThenQueue(t *testing.T) {
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: `
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - {id: doubao, mcp: {transport: http, url: "{{vendors}}/doubao/mcp"}, probe: {disabled: true}}
  - {id: sd, mcp: {transport: http, url: "{{vendors}}/sd/mcp"}, probe: {disabled: true}}
capabilities:
  - name: image.generate
    input_schema: {type: object, required: [prompt], properties: {prompt: {type: string}}}
    chain:
      - tool: doubao/generate_image
      - tool: sd/txt2img
        args: [{from: /prompt, to: /text}]
cache:
  tools: {image.generate: {ttl: 1ns, keep_stale: 1h}}   # every later call finds the entry stale
fallback:
  capabilities: {image.generate: {queue: true}}
governance: {retry: {max: 0}}
jobs: {max_attempts: 10}
`})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	gen := func(prompt string) (*hub.Result, error) {
		return l.App.Gateway.Call(t.Context(), &hub.Call{Tenant: "default", Name: "image.generate", Arguments: map[string]any{"prompt": prompt}})
	}
	// 1. Healthy: the primary answers, with an image.
	res, err := gen("a red fox")
	if err != nil || res.Provenance.Vendor != "doubao" || res.Provenance.Fallback {
		t.Fatalf("healthy: %v %+v", err, res)
	}
	// 2. The primary fails: the secondary answers; the client sees no error.
	if err := l.SetMode("doubao", drill.FaultFail); err != nil {
		t.Fatal(err)
	}
	res, err = gen("a red fox")
	if err != nil || res.Provenance.Vendor != "sd" || !res.Provenance.Fallback {
		t.Fatalf("primary down: %v %+v", err, res)
	}
	// 3. Both fail: the last good result, marked stale, with its age.
	if err := l.SetMode("sd", drill.FaultHTTP500); err != nil {
		t.Fatal(err)
	}
	res, err = gen("a red fox")
	if err != nil || !res.Provenance.Stale || res.Provenance.AgeSeconds <= 0 {
		t.Fatalf("both down, cached: %v %+v", err, res)
	}
	// 4. Both fail and nothing is cached: a durable job, pushed when done.
	ws, _, err := websocket.DefaultDialer.DialContext(t.Context(), "ws"+strings.TrimPrefix(l.HubURL, "http")+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	res, err = gen("a blue whale")
	if err != nil || !res.Provenance.Queued || res.Provenance.JobID == "" {
		t.Fatalf("both down, nothing cached: %v %+v", err, res)
	}
	if !strings.Contains(hub.TextOf(res), "pushed") {
		t.Errorf("queued answer text = %q", hub.TextOf(res))
	}
	job := res.Provenance.JobID
	if err := l.SetMode("doubao", drill.FaultOK); err != nil { // the vendor comes back
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	var statuses []string
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("websocket: %v (statuses so far %v)", err, statuses)
		}
		var ev struct {
			JobID  string          `json:"job_id"`
			Status string          `json:"status"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(msg, &ev) != nil || ev.JobID != job {
			continue
		}
		statuses = append(statuses, ev.Status)
		if ev.Status == "succeeded" {
			if !strings.Contains(string(ev.Result), `"image"`) {
				t.Errorf("pushed result has no image: %s", ev.Result)
			}
			break
		}
		if ev.Status == "failed" {
			t.Fatalf("the job failed: %v", statuses)
		}
	}
	// And it can be fetched by id.
	resp, err := http.Get(l.HubURL + "/v1/jobs/" + job)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Status string `json:"status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&got)
	if resp.StatusCode != 200 || got.Status != "succeeded" {
		t.Errorf("GET /v1/jobs/%s: %d %+v", job, resp.StatusCode, got)
	}
	// Exactly one call of the job reached the healthy vendor's tool.
	if n := l.Vendors["doubao"].Counters().OK; n != 2 { // step 1 and the job
		t.Errorf("doubao answered %d calls, want 2", n)
	}
}
