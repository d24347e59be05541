package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPlanModeAsksForAPlanAndRunsIt(t *testing.T) {
	b := newBarrier(2)
	h := newTestHub(t, map[string]tool{"wx/current": b.tool, "maps/route": b.tool}, nil)
	cyclic := `{"steps":[{"id":"a","tool":"wx__current","depends_on":["b"]},{"id":"b","tool":"maps__route","depends_on":["a"]}]}`
	good := "```json\n" + `{"steps":[
		{"id":"w","tool":"wx__current","arguments":{"city":"Paris"}},
		{"id":"r","tool":"maps__route","arguments":{"from":"Paris","to":"Lyon"}},
		{"id":"integrate","tool":"integrate","depends_on":["w","r"]}]}` + "\n```"
	m := newScriptedModel(t, func(i int, req map[string]any) (int, string) {
		switch i {
		case 1: // this server does not know response_format
			return 400, `{"error":{"message":"Unrecognized request argument supplied: response_format","type":"invalid_request_error"}}`
		case 2:
			return 200, final(cyclic)
		}
		return 200, final(good)
	})
	p := newLLMPlanner(t, h, m)
	out, err := p.Run(t.Context(), "t", Request{Goal: "trip Paris to Lyon", Mode: ModePlan}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if reqs[0]["response_format"].(map[string]any)["type"] != "json_object" || reqs[1]["response_format"] != nil {
		t.Errorf("response_format: %v then %v", reqs[0]["response_format"], reqs[1]["response_format"])
	}
	msgs, _ := json.Marshal(reqs[2]["messages"])
	if !strings.Contains(string(msgs), "dependency cycle a → b → a") {
		t.Errorf("the model was not told about the cycle: %s", msgs)
	}
	if out.Status != StatusOK || len(out.Steps) != 3 || out.Plan == nil || !strings.Contains(out.Answer, "w: echo") {
		t.Errorf("outcome %+v", out)
	}
}
