package jobs

import (
	"os"
	"path/filepath"
	"testing"
)

// A data folder whose path holds '?', '#', '%' and spaces opens the job
// database it names (the DSN escapes the path).
func TestOpenSQLiteAwkwardPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data ?x=1 #frag %41")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "jobs.db")
	s, err := OpenSQLite(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add(t.Context(), &Job{ID: "j1", Tenant: "t", Tool: "x", Status: Queued}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the job database is not at %q: %v", path, err)
	}
}
