package approval_test

import (
	"path/filepath"
	"testing"

	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/approval/approvaltest"
)

func TestMemory(t *testing.T) {
	approvaltest.Run(t, func(t *testing.T) approval.Store { return approval.NewMemory() }, nil)
}

func TestSQLite(t *testing.T) {
	open := func(t *testing.T, path string) approval.Store {
		s, err := approval.OpenSQLite(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	paths := map[approval.Store]string{}
	approvaltest.Run(t,
		func(t *testing.T) approval.Store {
			p := filepath.Join(t.TempDir(), "registry.db")
			s := open(t, p)
			paths[s] = p
			return s
		},
		func(t *testing.T, s approval.Store) approval.Store { return open(t, paths[s]) },
	)
}
