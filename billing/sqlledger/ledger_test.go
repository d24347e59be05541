package sqlledger_test

import (
	"path/filepath"
	"testing"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
	"github.com/toolhub/toolhub/billing/sqlledger"
)

func open(t testing.TB) *sqlledger.Ledger {
	t.Helper()
	l, err := sqlledger.Open(t.Context(), filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestContract(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) billing.Ledger { return open(t) })
}

func TestPersistsAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlledger.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := ledgertest.Fixture()
	if err := l.Append(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = sqlledger.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	if s := l.Stats(); s.Appended != 0 || s.Duplicates != int64(len(evs)) {
		t.Errorf("after reopen, Stats = %+v; want every event a duplicate", s)
	}
}
