package drill_test

import (
	"os"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

// The short versions of `toolhub drill --faults redis,postgres`: what they
// must show is that calls go on and no usage event is lost or counted
// twice; their times are reported, never asserted.

func outageOptions(t *testing.T) *drill.OutageOptions {
	redistest.Client(t) // a missing Redis fails here, with what to do
	return &drill.OutageOptions{Vendors: drillvendors.Server, Rate: 100, Hold: 300 * time.Millisecond, Warm: 300 * time.Millisecond,
		Redis: redistest.Addr(), Postgres: os.Getenv("TOOLHUB_TEST_POSTGRES")}
}

func checkOutage(t *testing.T, rep drill.OutageReport) {
	t.Helper()
	t.Log(rep)
	if rep.DuringFault == 0 {
		t.Error("no call was made during the outage")
	}
	if rep.ClientErrors != 0 {
		t.Errorf("%d calls failed (first: %s); the hub must work on without the store", rep.ClientErrors, rep.FirstError)
	}
	if rep.EventsLost != 0 || rep.EventsExtra != 0 {
		t.Errorf("usage events lost %d, duplicated %d", rep.EventsLost, rep.EventsExtra)
	}
}

func TestRedisOutageDrill(t *testing.T) {
	rep, err := drill.RedisOutage(t.Context(), outageOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	checkOutage(t, rep)
	if rep.FallbackLogs != 1 {
		t.Errorf("the fallback was logged %d times, want once", rep.FallbackLogs)
	}
}

func TestPostgresOutageDrill(t *testing.T) {
	rep, err := drill.PostgresOutage(t.Context(), outageOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	checkOutage(t, rep)
	if rep.Spilled == 0 || rep.Replayed < rep.Spilled {
		t.Errorf("spilled %d usage events, replayed %d", rep.Spilled, rep.Replayed)
	}
}
