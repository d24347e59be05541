package jobs_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/jobs"
)

// A job's stored result keeps the findings of its vendor's result scan
// (GET /v1/jobs/{id} and A2A render them), and the content as it was.
func TestEncodeResultKeepsFindings(t *testing.T) {
	fs := []hub.Finding{{Field: "content/0/text", Rule: "tag", Span: "<IMPORTANT>"}}
	raw, err := jobs.EncodeResult(&hub.Result{Content: []mcp.Content{mcp.NewTextContent("a <IMPORTANT>")}, Findings: fs})
	if err != nil {
		t.Fatal(err)
	}
	var rj jobs.ResultJSON
	if err := json.Unmarshal(raw, &rj); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fs, rj.Findings); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if want := `[{"type":"text","text":"a \u003cIMPORTANT\u003e"}]`; string(rj.Content) != want {
		t.Errorf("content %s, want %s", rj.Content, want)
	}
	raw, _ = jobs.EncodeResult(&hub.Result{})
	var none jobs.ResultJSON
	if json.Unmarshal(raw, &none) != nil || none.Findings != nil {
		t.Errorf("a result without findings: %s", raw)
	}
}
