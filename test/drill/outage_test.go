package drill_test

import (
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/drill"
)

// TestImageOutageDrill is the short form of `toolhub drill outage`: both
// image vendors down for 3s under 20 calls/s, then back. Every call is
// answered within 1s (stale or queued), every job queued during the
// outage completes after recovery (it used to fail 3s into an outage,
// after 3 attempts), pushed once and charged once.
func TestImageOutageDrill(t *testing.T) {
	l, err := drill.NewLab(t.Context(), drill.LabOptions{Config: drill.ImageOutageConfig})
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
	if rep.Within1s != rep.Calls || rep.Errors != 0 {
		t.Errorf("%d of %d calls answered within 1s, %d errors", rep.Within1s, rep.Calls, rep.Errors)
	}
	if rep.PushedTwice != 0 || rep.NotPushed != 0 || rep.ChargedTwice != 0 || rep.NotCharged != 0 {
		t.Errorf("pushes: %d twice, %d never; charges: %d twice, %d none", rep.PushedTwice, rep.NotPushed, rep.ChargedTwice, rep.NotCharged)
	}
}
