package hub_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/hub"
)

// Reserved _meta keys are dropped from a caller's _meta in any case.
func TestClientMeta(t *testing.T) {
	in := map[string]any{"toolhub/job_id": 1, "Toolhub/Idempotency_Key": 2, "TOOLHUB/JOB_ID": 3, "trace": "t", "toolhub/data_level": 1}
	want := map[string]any{"trace": "t", "toolhub/data_level": 1}
	if d := cmp.Diff(want, hub.ClientMeta(in)); d != "" {
		t.Errorf("ClientMeta (-want +got):\n%s", d)
	}
}
