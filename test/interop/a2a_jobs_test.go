package interop

import (
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// TestA2AQueuedCallFollowsJob: through a whole toolhub, an A2A client
// calls a capability whose only vendor is down; the call is queued and the
// client gets a working task at once; the vendor comes back, the job's
// worker runs it, and the task completes with the image as its artifact.
func TestA2AQueuedCallFollowsJob(t *testing.T) {
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: `
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - {id: doubao, mcp: {transport: http, url: "{{vendors}}/doubao/mcp"}, probe: {disabled: true}}
capabilities:
  - name: image.generate
    input_schema: {type: object, required: [prompt], properties: {prompt: {type: string}}}
    chain:
      - tool: doubao/generate_image
fallback:
  capabilities: {image.generate: {queue: true}}
governance: {retry: {max: 0}, breaker: {cool_down: 100ms, max_cool_down: 200ms}}
jobs: {max_attempts: 1000}
`})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetMode("doubao", drill.FaultHTTP500); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	card, err := agentcard.DefaultResolver.Resolve(ctx, l.HubURL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatal(err)
	}
	msg := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewDataPart(map[string]any{"prompt": "a blue whale"}))
	msg.Metadata = map[string]any{"skill": "image.generate"}
	res, err := client.SendMessage(ctx, &sdk.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*sdk.Task)
	if !ok || task.Status.State != sdk.TaskStateWorking {
		t.Fatalf("SendMessage = %#v, want a working task", res)
	}
	jobID, _ := task.Metadata["toolhub/job_id"].(string)
	if jobID == "" {
		t.Fatalf("task metadata = %v, want toolhub/job_id", task.Metadata)
	}

	if err := l.SetMode("doubao", drill.FaultOK); err != nil { // the vendor comes back
		t.Fatal(err)
	}
	var got *sdk.Task
	deadline := time.Now().Add(90 * time.Second) // the job's retries back off up to 30 s
	for {
		got, err = client.GetTask(ctx, &sdk.GetTaskRequest{ID: task.ID})
		if err == nil && got.Status.State.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still %v (%v) after the vendor came back", got, err)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
	if got.Status.State != sdk.TaskStateCompleted || len(got.Artifacts) != 1 {
		t.Fatalf("task = %+v, want completed with one artifact", got.Status)
	}
	art := got.Artifacts[0]
	var image bool
	for _, p := range art.Parts {
		if _, ok := p.Content.(sdk.Raw); ok && len(p.MediaType) > 6 && p.MediaType[:6] == "image/" {
			image = true
		}
	}
	if !image {
		t.Errorf("artifact has no image part: %+v", art.Parts)
	}
	if art.Metadata["toolhub/job_id"] != jobID {
		t.Errorf("artifact metadata = %v", art.Metadata)
	}
	j, err := l.App.Jobs.Get(ctx, jobID)
	if err != nil || j.Status != "succeeded" {
		t.Errorf("job = %+v, %v", j, err)
	}
}
