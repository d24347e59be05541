package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/x/clocktest"
)

// fakeClock is a settable clock (internal/x/clocktest).
type fakeClock = clocktest.Clock

func newClock() *fakeClock { return clocktest.New(time.Now().Truncate(time.Millisecond)) }

// opener opens a store on the same data each time it is called (to test
// durability across a close and reopen).
type opener = func(t testing.TB, now func() time.Time) Store

// Impl is one Store implementation the tests of this package run against.
type Impl struct {
	Name string
	// NewOpener returns an opener bound to fresh, empty data.
	NewOpener func(t testing.TB) func(t testing.TB, now func() time.Time) Store
}

// Impls are the implementations forEach runs a test against. The drivers
// (sqlitejobs, redisjobs) import this package, so drivers_test.go
// (package jobs_test) sets Impls from its init.
var Impls []Impl

// forEach runs a contract test against every Store implementation.
func forEach(t *testing.T, fn func(t *testing.T, open opener)) {
	if len(Impls) == 0 {
		t.Fatal("no Store implementation registered (drivers_test.go)")
	}
	for _, im := range Impls {
		t.Run(im.Name, func(t *testing.T) { fn(t, im.NewOpener(t)) })
	}
}

func statuses(evs []Event, job string) []Status {
	var out []Status
	for _, e := range evs {
		if job == "" || e.JobID == job {
			out = append(out, e.Status)
		}
	}
	return out
}

func allEvents(t testing.TB, s Store, tenant string) []Event {
	t.Helper()
	evs, err := s.Events(context.Background(), tenant, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
