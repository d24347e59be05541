package sqlledger_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
	"github.com/toolhub/toolhub/billing/sqlledger"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/x/sqlitedb"
)

// TestAppendOfNewCallsWritesFewPages: the meter appends the events of new
// calls, keyed by their call ids. If those keys land all over the key
// index, every batch rewrites most of its pages, and an append costs more
// the bigger the ledger grows (in the hop bench: 4 pwrite(2) and 0.9
// pread(2) per call). Call ids that sort by time put new keys at the end
// of the index: a batch writes about as many pages as its rows fill.
func TestAppendOfNewCallsWritesFewPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqlledger.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	calls := func(n int) []billing.Event {
		evs := make([]billing.Event, 0, 2*n)
		for i := range n {
			id := hub.NewCallID()
			for j, key := range []string{billing.CallKey(id), billing.AttemptKey(id, 1)} {
				ev := ledgertest.Synthetic(2*i + j)
				ev.Key, ev.CallID = key, id
				evs = append(evs, ev)
			}
		}
		return evs
	}
	// A ledger with history: 8,000 calls, appended in the meter's batches.
	// That is enough to tell: with the same sizes and random call ids, the
	// batch below wrote 218 pages, with ids that sort by time 64.
	for range 8 {
		if err := l.Append(t.Context(), calls(1000)); err != nil {
			t.Fatal(err)
		}
	}
	// Empty SQLite's WAL, so its size afterwards counts the pages one
	// batch writes.
	db, err := sqlitedb.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	var pageSize int64
	if err := db.QueryRowContext(t.Context(), "PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	batch := calls(250)
	if err := l.Append(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	frames := (st.Size() - 32) / (pageSize + 24)
	// The rows alone fill about len(batch)*300/pageSize pages; allow three
	// times that for the indexes and the rollups.
	rowPages := int64(len(batch)) * 300 / pageSize
	t.Logf("one batch of %d events wrote %d pages (%d-byte pages; its rows fill ~%d)", len(batch), frames, pageSize, rowPages)
	if frames > 3*rowPages {
		t.Errorf("one batch of %d new calls' events wrote %d pages, more than 3× the ~%d its rows fill: new keys are scattered over the key index", len(batch), frames, rowPages)
	}
}
