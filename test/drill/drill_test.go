// Package drill_test runs fault drills against the example vendors through
// a whole hub: a vendor that fails, hangs or comes back; Redis going away.
package drill_test

import (
	stdcontext "context"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
)

func TestFailoverDrill(t *testing.T) {
	for _, fault := range []drill.Fault{drill.FaultFail, drill.FaultSlow, drill.FaultGarbage, drill.FaultHTTP500} {
		t.Run(string(fault), func(t *testing.T) {
			l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: drill.FailoverConfig})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			rep, err := drill.Failover(t.Context(), l, 200, 300*time.Millisecond, fault)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(rep)
			if rep.ClientErrors != 0 {
				t.Errorf("%d calls failed at the client although weather-b could answer", rep.ClientErrors)
			}
			if rep.DuringFault == 0 || rep.FaultOK != rep.DuringFault {
				t.Errorf("during the fault %d of %d calls were answered", rep.FaultOK, rep.DuringFault)
			}
			// While open the breaker lets through only half-open trial calls.
			if rep.PrimaryCalls > 12 {
				t.Errorf("%d calls reached weather-a while its breaker was open", rep.PrimaryCalls)
			}
			if rep.EventsLost != 0 || rep.EventsExtra != 0 {
				t.Errorf("usage events lost %d, extra %d", rep.EventsLost, rep.EventsExtra)
			}
		})
	}
}

func context() stdcontext.Context { return stdcontext.Background() }
