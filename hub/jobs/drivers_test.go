package jobs_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/jobs/redisjobs"
	"github.com/toolhub/toolhub/hub/jobs/sqlitejobs"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

// The tests of package jobs run against both stores; the stores import
// package jobs, so they are registered from here.
func init() {
	jobs.Impls = []jobs.Impl{
		{Name: "sqlite", NewOpener: func(t testing.TB) func(t testing.TB, now func() time.Time) jobs.Store {
			path := filepath.Join(t.TempDir(), "jobs.db")
			return func(t testing.TB, now func() time.Time) jobs.Store {
				s, err := sqlitejobs.Open(context.Background(), path, &sqlitejobs.Options{Now: now})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		}},
		{Name: "redis", NewOpener: func(t testing.TB) func(t testing.TB, now func() time.Time) jobs.Store {
			c := redistest.Client(t)
			p := redistest.Prefix(t, c)
			return func(t testing.TB, now func() time.Time) jobs.Store {
				s, err := redisjobs.New(context.Background(), c, &redisjobs.Options{Prefix: p, Now: now, ReclaimIdle: time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		}},
	}
}
