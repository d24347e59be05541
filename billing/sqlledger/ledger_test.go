package sqlledger_test

import (
	"errors"
	"os"
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

// TestSyncCheckpoints: Sync writes SQLite's WAL back into the database
// file (fsynced), so what was committed no longer depends on the WAL file:
// the database file alone, opened without it, holds every event.
func TestSyncCheckpoints(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	l, err := sqlledger.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := ledgertest.Fixture()
	if err := l.Append(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A copy of the database file alone, as a power loss that lost the WAL
	// would leave it.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := l.Sync(t.Context()); !errors.Is(err, billing.ErrClosed) {
		t.Errorf("Sync after Close = %v, want ErrClosed", err)
	}
	cp := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := sqlledger.Open(t.Context(), cp, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Append(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Appended != 0 {
		t.Errorf("the database file alone lacked %d of %d events after Sync", s.Appended, len(evs))
	}
}
