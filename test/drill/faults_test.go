package drill_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// TestStoreFaultsDrill is the short version of `toolhub drill faults`:
// two real toolhub processes on a Redis and a PostgreSQL of the drill's
// own, through Redis hung, an instance killed, PostgreSQL stopped and an
// instance restarted while Redis is gone. Every call must be answered,
// each instance must answer in every phase, and the ledger must agree
// with the vendor and the clients; the times are reported, never asserted.
func TestStoreFaultsDrill(t *testing.T) {
	for _, bin := range []string{"redis-server", "initdb", "postgres"} {
		if _, err := exec.LookPath(bin); err != nil {
			if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + bin); len(m) == 0 {
				msg := bin + " is not installed: run `make services` (or set TOOLHUB_SKIP_REDIS=1 to skip)"
				if os.Getenv("TOOLHUB_SKIP_REDIS") == "1" {
					t.Skip(msg)
				}
				t.Fatal(msg)
			}
		}
	}
	bin := toolhubBinary(t)
	var logs syncBuffer
	rep, err := drill.StoreFaults(t.Context(), &drill.StoreFaultsOptions{Binary: bin, Vendors: drillvendors.Server,
		Rate: 20, Hold: 2 * time.Second, Settle: time.Second, Logs: &logs})
	if err != nil {
		t.Fatalf("%v\nlast instance logs:\n%s", err, lastLines(logs.String(), 40))
	}
	t.Log(rep)
	want := []string{"steady", "redis hung (SIGSTOP)", "instance 1 killed (SIGKILL), restarted", "postgres stopped", "instance 0 restarted, redis gone"}
	if len(rep.Phases) != len(want) {
		t.Fatalf("%d phases, want %d (%q)", len(rep.Phases), len(want), want)
	}
	for i, p := range rep.Phases {
		if p.Name != want[i] {
			t.Errorf("phase %d is %q, want %q", i, p.Name, want[i])
		}
		if p.Failed != 0 || p.Answered != p.Calls || p.Calls == 0 {
			t.Errorf("%s: %d of %d calls answered, %d failed on both instances", p.Name, p.Answered, p.Calls, p.Failed)
		}
		for j, c := range p.Instances {
			if c.Answered == 0 {
				t.Errorf("%s: instance %d answered none of the %d calls sent to it", p.Name, j, c.Sent)
			}
		}
	}
	if rep.LedgerCalls != rep.Answered || rep.EventsLost != 0 || rep.EventsExtra != 0 {
		t.Errorf("ledger has %d calls, clients were answered %d: %d lost, %d extra", rep.LedgerCalls, rep.Answered, rep.EventsLost, rep.EventsExtra)
	}
	if rep.LedgerAttempts != rep.VendorCalls || rep.AttemptsLost != 0 || rep.AttemptsExtra != 0 {
		t.Errorf("ledger has %d attempts, the vendor received %d calls: %d lost, %d extra", rep.LedgerAttempts, rep.VendorCalls, rep.AttemptsLost, rep.AttemptsExtra)
	}
	if !rep.Ok() {
		t.Errorf("report not ok:\n%s", rep)
	}
}
