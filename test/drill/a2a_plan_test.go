package drill_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/orchestrator"
)

// TestPlannerAsA2ASkill: an A2A client finds the planner skill on toolhub's
// card and runs a goal through it, end to end against the example vendors.
func TestPlannerAsA2ASkill(t *testing.T) {
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: `
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - {id: weather-a, mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}, probe: {disabled: true}}
capabilities:
  - name: weather.current
    input_schema: {type: object, required: [city], properties: {city: {type: string}}}
    chain: [{tool: weather-a/current_weather}]
`})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := t.Context()
	card, err := agentcard.DefaultResolver.Resolve(ctx, l.HubURL)
	if err != nil {
		t.Fatal(err)
	}
	var skills []string
	for _, s := range card.Skills {
		skills = append(skills, s.ID)
	}
	// Capabilities, the planner, then the vendor tools the caller may call.
	if strings.Join(skills, ",") != "weather.current,"+a2a.PlanSkill+",weather-a__current_weather" {
		t.Fatalf("skills = %v", skills)
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatal(err)
	}
	m := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("what is the weather in Oslo"))
	m.Metadata = map[string]any{"skill": a2a.PlanSkill}
	res, err := client.SendMessage(ctx, &sdk.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*sdk.Task)
	if !ok || task.Status.State != sdk.TaskStateCompleted || len(task.Artifacts) == 0 {
		t.Fatalf("result = %#v", res)
	}
	if got := task.Artifacts[0].Parts[0].Text(); !strings.Contains(got, "Oslo") {
		t.Errorf("answer = %q", got)
	}
}

// TestPlanReplaysFromTheDecisionLog: every call of a plan logs its plan id.
func TestPlanReplaysFromTheDecisionLog(t *testing.T) {
	var logs syncBuffer
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Config: `
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - {id: weather-a, mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}, probe: {disabled: true}}
  - {id: maps, mcp: {transport: http, url: "{{vendors}}/maps/mcp"}, probe: {disabled: true}}
capabilities:
  - name: weather.current
    input_schema: {type: object, required: [city], properties: {city: {type: string}}}
    chain: [{tool: weather-a/current_weather}]
  - name: maps.route
    input_schema: {type: object, required: [from, to], properties: {from: {type: string}, to: {type: string}}}
    chain: [{tool: maps/route}]
`})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out, err := l.App.Planner.Run(t.Context(), "default", orchestrator.Request{Goal: "trip from Paris to Lyon: weather and route"}, nil)
	if err != nil || out.PlanID == "" {
		t.Fatalf("plan: %v %+v", err, out)
	}
	l.App.Gov.Flush() // the decision log is written off the call path
	var steps []string
	for _, line := range strings.Split(logs.String(), "\n") {
		var e struct {
			Msg, PlanID, Tool string
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg == "call" && strings.Contains(line, `"plan_id":"`+out.PlanID+`"`) {
			var f struct {
				Tool string `json:"tool"`
			}
			_ = json.Unmarshal([]byte(line), &f)
			steps = append(steps, f.Tool)
		}
	}
	if len(steps) != 2 {
		t.Errorf("decision-log lines with plan %s: %v", out.PlanID, steps)
	}
}
