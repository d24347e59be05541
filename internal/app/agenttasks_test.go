package app_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/app"
	"github.com/toolhub/toolhub/test/harness"
)

// TestA2ATaskOfQueuedCallSurvivesRestart: toolhub's A2A task of a queued
// call is in data/jobs.db; a restarted toolhub serves it, follows its job
// and completes it when the vendor is back.
func TestA2ATaskOfQueuedCallSurvivesRestart(t *testing.T) {
	addr, vs := harness.ServeVendors(t, nil, vendors.Doubao)
	setMode := func(m vendors.Mode) {
		k := vs[vendors.Doubao].Knobs()
		k.Mode = m
		harness.SetKnobs(t, vs[vendors.Doubao], k)
	}
	cfg := harness.ParseConfig(t, `
data: {{data}}
outbound: {allow: ["{{addr}}"]}
vendors:
  - {id: doubao, mcp: {transport: http, url: "http://{{addr}}/doubao/mcp"}, probe: {disabled: true}}
capabilities:
  - name: image.generate
    input_schema: {type: object, required: [prompt], properties: {prompt: {type: string}}}
    chain:
      - tool: doubao/generate_image
fallback:
  capabilities: {image.generate: {queue: true}}
governance: {retry: {max: 0}, breaker: {cool_down: 100ms, max_cool_down: 200ms}}
jobs: {max_attempts: 1000}
`, "{{data}}", t.TempDir(), "{{addr}}", addr)
	// start runs a toolhub on cfg and returns an A2A client of it and its stop.
	start := func() (*app.App, *a2aclient.Client, func()) {
		t.Helper()
		h := harness.StartInProcess(t, cfg, &app.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, vendors.Doubao)
		card, err := agentcard.DefaultResolver.Resolve(t.Context(), h.URL)
		if err != nil {
			t.Fatal(err)
		}
		client, err := a2aclient.NewFromCard(t.Context(), card)
		if err != nil {
			t.Fatal(err)
		}
		return h.App, client, h.Stop
	}

	setMode(vendors.ModeHTTP500)
	_, client, stop := start()
	msg := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewDataPart(map[string]any{"prompt": "a red fox"}))
	msg.Metadata = map[string]any{"skill": "image.generate"}
	res, err := client.SendMessage(t.Context(), &sdk.SendMessageRequest{Message: msg})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	task, ok := res.(*sdk.Task)
	if !ok || task.Status.State != sdk.TaskStateWorking || task.Metadata["toolhub/job_id"] == nil {
		stop()
		t.Fatalf("SendMessage = %#v, want a working task with its job", res)
	}
	stop() // toolhub restarts while the job waits for the vendor

	a, client, stop := start()
	defer stop()
	got, err := client.GetTask(t.Context(), &sdk.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State.Terminal() {
		t.Fatalf("task after the restart = %+v, %v; want it still running", got, err)
	}
	setMode(vendors.ModeOK)
	deadline := time.Now().Add(90 * time.Second) // the job's retries back off up to 30 s
	for {
		got, err = client.GetTask(t.Context(), &sdk.GetTaskRequest{ID: task.ID})
		if err == nil && got.Status.State.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still %+v (%v) after the vendor came back", got, err)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
	if got.Status.State != sdk.TaskStateCompleted || len(got.Artifacts) != 1 {
		t.Fatalf("task = %+v, want completed with the job's result", got.Status)
	}
	jobID, _ := got.Metadata["toolhub/job_id"].(string)
	if j, err := a.Jobs.Get(t.Context(), jobID); err != nil || j.Status != "succeeded" {
		t.Errorf("job = %+v, %v", j, err)
	}
}
