package sqliteapproval_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/approval/approvaltest"
	"github.com/toolhub/toolhub/approval/sqliteapproval"
	"github.com/toolhub/toolhub/internal/backend/sqlitedb/sqlitedbtest"
)

func TestContract(t *testing.T) {
	open := func(t *testing.T, path string) approval.Store {
		s, err := sqliteapproval.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the store's file is not at %q: %v", path, err)
		}
		return s
	}
	paths := map[approval.Store]string{}
	approvaltest.Run(t,
		func(t *testing.T) approval.Store {
			// A data folder whose path a file: URI must escape.
			p := filepath.Join(sqlitedbtest.AwkwardDir(t), "registry.db")
			s := open(t, p)
			paths[s] = p
			return s
		},
		func(t *testing.T, s approval.Store) approval.Store { return open(t, paths[s]) },
	)
}
