package drill_test

import (
	"os"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

// TestInstanceKillDrill is the short version of `toolhub drill --faults
// instance`: three real toolhub processes on one Redis and PostgreSQL, one
// killed with SIGKILL mid-load and restarted on its data folder. Nothing
// may be lost or counted twice; the times are reported, never asserted.
func TestInstanceKillDrill(t *testing.T) {
	redistest.Client(t)
	bin := toolhubBinary(t)
	var logs syncBuffer
	rep, err := drill.InstanceKill(t.Context(), &drill.InstanceOptions{Binary: bin, Vendors: drillvendors.Server, Rate: 60, Jobs: 4,
		Redis: redistest.Addr(), Postgres: os.Getenv("TOOLHUB_TEST_POSTGRES"), Logs: &logs})
	if err != nil {
		t.Fatalf("%v\nlast instance logs:\n%s", err, lastLines(logs.String(), 40))
	}
	t.Log(rep)
	if rep.ClientErrors != 0 {
		t.Errorf("%d calls failed on every instance (first: %s); the client's retry must find a live one", rep.ClientErrors, rep.FirstError)
	}
	if rep.JobsLost != 0 || rep.JobsDone != rep.Jobs {
		t.Errorf("jobs: %d lost, %d of %d completed at the vendor (want each exactly once)", rep.JobsLost, rep.JobsDone, rep.Jobs)
	}
	if rep.AttemptsLost != 0 || rep.AttemptsExtra != 0 {
		t.Errorf("ledger has %d vendor attempts (%d unknown), the vendors received %d calls: %d lost, %d duplicated",
			rep.LedgerAttempts, rep.UnknownAttempts, rep.VendorCalls, rep.AttemptsLost, rep.AttemptsExtra)
	}
	if rep.EventsLost != 0 || rep.EventsExtra != 0 {
		t.Errorf("usage events lost %d, duplicated %d", rep.EventsLost, rep.EventsExtra)
	}
	if rep.JobsOnKilled == 0 {
		t.Errorf("no job was running on the killed instance: the drill tested no reclaim")
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
