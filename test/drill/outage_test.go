package drill_test

import (
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// TestImageOutageDrill is the short form of `toolhub drill outage`: both
// image vendors down for 3s under 20 calls/s, then back. Every call is
// answered (stale or queued), every job queued during the
// outage completes after recovery (it used to fail 3s into an outage,
// after 3 attempts), pushed once and charged once.
func TestImageOutageDrill(t *testing.T) {
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: drill.ImageOutageConfig})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep, err := drill.ImageOutage(t.Context(), l, drill.ImageOutageOptions{Duration: 3 * time.Second, Rate: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Jobs == 0 || rep.Stale == 0 {
		t.Fatalf("the outage queued %d jobs and answered %d stale: the drill did not drill", rep.Jobs, rep.Stale)
	}
	if rep.Completed != rep.Jobs {
		t.Errorf("%d of %d jobs completed after recovery (%d failed, %d pending)", rep.Completed, rep.Jobs, rep.Failed, rep.Pending)
	}
	// Every call is answered (stale or queued), not failed; how fast is the
	// report's to say (a test asserts no wall-clock time).
	if rep.Stale+rep.Queued != rep.Calls || rep.Errors != 0 {
		t.Errorf("of %d calls %d stale, %d queued, %d errors", rep.Calls, rep.Stale, rep.Queued, rep.Errors)
	}
	if rep.PushedTwice != 0 || rep.NotPushed != 0 || rep.HookedTwice != 0 || rep.NotHooked != 0 || rep.ChargedTwice != 0 || rep.NotCharged != 0 {
		t.Errorf("WebSocket pushes: %d twice, %d never; webhook: %d twice, %d never; charges: %d twice, %d none",
			rep.PushedTwice, rep.NotPushed, rep.HookedTwice, rep.NotHooked, rep.ChargedTwice, rep.NotCharged)
	}
}
