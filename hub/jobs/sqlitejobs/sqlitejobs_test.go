package sqlitejobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/jobs/jobstest"
	"github.com/toolhub/toolhub/internal/x/sqlitedb/sqlitedbtest"
)

func TestContract(t *testing.T) {
	jobstest.Run(t, func(t testing.TB) jobstest.Opener {
		path := filepath.Join(t.TempDir(), "jobs.db")
		return func(t testing.TB, now func() time.Time) jobs.Store {
			s, err := Open(t.Context(), path, &Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// TestSQLitePlans: the statements a job's life runs read jobs and events
// through indexes, and sort no rows of them: a claim walks to the first
// due job (it used to sort every due job, on every claim: a drain of n
// jobs cost n²).
func TestSQLitePlans(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "jobs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range sqlitePrepared {
		if !strings.HasPrefix(q, "SELECT") && !strings.HasPrefix(q, "UPDATE") {
			continue
		}
		n := strings.Count(q, "?")
		if strings.Contains(q, "?1") {
			n = 1 // numbered: one argument
		}
		args := make([]any, n)
		for i := range args {
			args[i] = 1
		}
		rows, err := s.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		type node struct {
			parent int
			detail string
		}
		var plan []node
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, node{parent, detail})
		}
		rows.Close()
		for _, n := range plan {
			if strings.HasPrefix(n.detail, "SCAN job") {
				t.Errorf("%s\nscans a whole table: %v", q, plan)
			}
			if !strings.HasPrefix(n.detail, "USE TEMP B-TREE") {
				continue
			}
			for _, m := range plan {
				if m.parent == n.parent && (strings.HasPrefix(m.detail, "SEARCH job") || strings.HasPrefix(m.detail, "SCAN job")) {
					t.Errorf("%s\nsorts the rows it reads: %v", q, plan)
				}
			}
		}
	}
}

// A data folder whose path holds '?', '#', '%' and spaces opens the job
// database it names (the DSN escapes the path).
func TestOpenAwkwardPath(t *testing.T) {
	path := filepath.Join(sqlitedbtest.AwkwardDir(t), "jobs.db")
	s, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add(t.Context(), &jobs.Job{ID: "j1", Tenant: "t", Tool: "x", Status: jobs.Queued}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the job database is not at %q: %v", path, err)
	}
}
