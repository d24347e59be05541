package drill_test

import (
	"strings"
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

// TestImageOutageDrillDefaultConfig (issue 30): the same outage with the
// defaults users run — no business probes, the default 30s cool-down and
// ramp. A job queued during the outage used to wait for its vendors'
// breakers to cool down (30s, then 60s, 120s): nothing else woke it. Now
// a waiting job retries every 2s and its call may go through an open
// breaker as a trial, so the jobs complete long before a cool-down ends.
// The drill waits less than one cool-down for them.
func TestImageOutageDrillDefaultConfig(t *testing.T) {
	cfg := drill.ImageOutageDefaultsConfig
	if strings.Contains(cfg, "probe:") || strings.Contains(cfg, "ramp_interval") {
		t.Fatalf("the drill's config still sets probes or the ramp:\n%s", cfg)
	}
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rep, err := drill.ImageOutage(t.Context(), l, drill.ImageOutageOptions{Duration: 3 * time.Second, Rate: 20, Drain: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Jobs == 0 {
		t.Fatalf("the outage queued no jobs: the drill did not drill")
	}
	if rep.Completed != rep.Jobs {
		t.Errorf("%d of %d jobs completed within one breaker cool-down of recovery (%d failed, %d pending): waiting jobs did not find the recovery by themselves",
			rep.Completed, rep.Jobs, rep.Failed, rep.Pending)
	}
	if rep.ChargedTwice != 0 || rep.NotCharged != 0 || rep.PushedTwice != 0 {
		t.Errorf("charges: %d twice, %d none; pushes: %d twice", rep.ChargedTwice, rep.NotCharged, rep.PushedTwice)
	}
}
