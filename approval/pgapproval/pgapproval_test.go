package pgapproval_test

import (
	"testing"

	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/approval/approvaltest"
	"github.com/toolhub/toolhub/approval/pgapproval"
	"github.com/toolhub/toolhub/internal/x/pgtest"
)

func TestContract(t *testing.T) {
	open := func(t *testing.T, schema string) approval.Store {
		s, err := pgapproval.Open(t.Context(), pgtest.DSN(t), &pgapproval.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	schemas := map[approval.Store]string{}
	approvaltest.Run(t,
		func(t *testing.T) approval.Store {
			schema := pgtest.Schema(t)
			s := open(t, schema)
			schemas[s] = schema
			return s
		},
		func(t *testing.T, s approval.Store) approval.Store { return open(t, schemas[s]) },
	)
}
