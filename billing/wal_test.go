package billing_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// stuckLedger never finishes an Append until released, like a writer
// goroutine that a kill -9 stops before it commits anything.
type stuckLedger struct {
	billing.Ledger
	release chan struct{}
}

func (s *stuckLedger) Append(ctx context.Context, evs []billing.Event) error {
	<-s.release
	return errors.New("stuck ledger: released")
}

// snapshot copies dir's files as they are now: what a process killed at
// this instant leaves on disk (the page cache survives the process).
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func attemptCall(id string) *hub.Call {
	return &hub.Call{ID: id, Tenant: "acme", Name: "doubao__generate_image",
		Tool: &registry.Tool{Vendor: "doubao", Def: registry.ToolDef{Name: "generate_image"}}, Trace: &hub.Trace{}}
}

// metered wraps upstream in the meter's two middlewares; upstream records
// its attempt in the trace, as the gateway does.
func metered(m *billing.Meter, upstream func(c *hub.Call)) hub.Invoker {
	return hub.Chain(hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		upstream(c)
		c.Trace.Attempts = append(c.Trace.Attempts, hub.Attempt{Vendor: "doubao", Tool: "generate_image", Outcome: "ok"})
		return &hub.Result{Structured: map[string]any{"images": 1.0}, Provenance: hub.Provenance{Vendor: "doubao", Tool: "generate_image"}}, nil
	}), m.Middleware(), m.AttemptMiddleware())
}

// TestMeterWALSurvivesKill records events into a meter whose writer never
// commits, takes the files a kill -9 would leave while a call is at its
// vendor, and starts a new meter on them: every event reaches the ledger,
// and the attempt in flight becomes an attempt event with outcome unknown.
func TestMeterWALSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	spillDir := filepath.Join(dir, "spill")
	stuck := &stuckLedger{Ledger: openLedger(t, dir), release: make(chan struct{})}
	m1, err := billing.NewMeter(stuck, &billing.MeterOptions{SpillDir: spillDir, Pricer: billing.NewPricer(book(t), nil), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(stuck.release); m1.Close() })

	evs := ledgertest.Fixture()
	for _, e := range evs {
		m1.Record(e)
	}
	// Call "done" ends (its attempt event resolves its intent); toolhub
	// dies while call "lost" is at the vendor.
	var killed, again string
	inv := metered(m1, func(c *hub.Call) {
		if c.ID == "lost" {
			killed, again = snapshot(t, spillDir), snapshot(t, spillDir)
		}
	})
	for _, id := range []string{"done", "lost"} {
		if _, err := inv.Invoke(context.Background(), attemptCall(id)); err != nil {
			t.Fatal(err)
		}
	}

	l2 := openLedger(t, t.TempDir())
	m2 := newMeter(t, l2, &billing.MeterOptions{SpillDir: killed, Logger: quiet})
	// "done" is one line, its call and its one attempt (MergeAttempt).
	if s := m2.Stats(); s.Recovered != int64(len(evs))+1 || s.Unknown != 1 {
		t.Errorf("stats after recovery %+v; want %d recovered, 1 unknown", s, len(evs)+1)
	}
	if err := m2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]billing.Event{}
	if err := l2.Query(context.Background(), billing.Filter{}, func(e billing.Event) error {
		got[e.Key] = e
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs)+3 {
		t.Errorf("ledger has %d events, want %d", len(got), len(evs)+3)
	}
	lost, done := got["lost/1"], got["done/1"]
	if lost.Outcome != billing.OutcomeUnknown || lost.VendorCost != 0 || lost.Currency != "USD" || lost.PriceVersion != "2026-12" || done.Outcome != billing.OutcomeOK {
		t.Errorf("lost/1 = %+v (want unknown, no payout, priced by 2026-12); done/1 = %q (want ok)", lost, done.Outcome)
	}
	if !strings.HasPrefix(lost.Reason, "unknown: toolhub stopped before the vendor answered") || done.Reason != "" {
		t.Errorf("lost/1 reason %q, done/1 reason %q", lost.Reason, done.Reason)
	}
	if _, ok := got["lost/call"]; ok {
		t.Error("the lost call has a call event: its tenant would be charged for a call that never answered")
	}
	if diff := cmp.Diff(usd(evs).Calls+1, total(t, l2).Calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if segs, _ := filepath.Glob(filepath.Join(killed, "wal-*.log")); len(segs) != 0 {
		t.Errorf("WAL segments left after recovery and flush: %v", segs)
	}

	// A second recovery of the same files changes nothing.
	m3 := newMeter(t, l2, &billing.MeterOptions{SpillDir: again, Logger: quiet})
	if err := m3.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ls := l2.Stats(); ls.Appended != int64(len(evs))+2 || ls.Duplicates != int64(len(evs))+2 {
		t.Errorf("ledger stats after a second recovery %+v", ls)
	}
}

// TestMeterCheckpointKeepsOpenIntents checks that a flush removes the WAL
// segments whose events are in the ledger, keeping only the intents of
// attempts in flight; and that attempts outside a metered call get none.
func TestMeterCheckpointKeepsOpenIntents(t *testing.T) {
	dir := t.TempDir()
	spillDir := filepath.Join(dir, "spill")
	l := openLedger(t, dir)
	m := newMeter(t, l, &billing.MeterOptions{SpillDir: spillDir})
	for _, e := range ledgertest.Fixture() {
		m.Record(e)
	}
	// Not metered (a probe, a background refresh): no intent.
	bare := m.AttemptMiddleware()(hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return &hub.Result{}, nil }))
	bare.Invoke(context.Background(), attemptCall("bare"))
	var killed string
	metered(m, func(c *hub.Call) {
		for range 2 { // the second checkpoint carries the intent again
			if err := m.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if segs, _ := filepath.Glob(filepath.Join(spillDir, "wal-*.log")); len(segs) != 1 {
			t.Errorf("WAL segments after flush: %v, want one with the open intent", segs)
		}
		if s := m.Stats(); s.Open != 1 {
			t.Errorf("%d open intents at the vendor, want 1", s.Open)
		}
		killed = snapshot(t, spillDir)
	}).Invoke(context.Background(), attemptCall("open"))
	if s := m.Stats(); s.Open != 0 {
		t.Errorf("%d open intents after the call, want 0", s.Open)
	}
	m2 := newMeter(t, openLedger(t, t.TempDir()), &billing.MeterOptions{SpillDir: killed})
	if s := m2.Stats(); s.Recovered != 0 || s.Unknown != 1 {
		t.Errorf("stats %+v; want just 1 unknown", s)
	}
}

// TestNoIntentAfterTheCallEnded checks that an attempt made with a
// finished call's context (a cache's background refresh) logs no intent:
// no event would ever resolve it.
func TestNoIntentAfterTheCallEnded(t *testing.T) {
	dir := t.TempDir()
	m := newMeter(t, openLedger(t, dir), &billing.MeterOptions{SpillDir: filepath.Join(dir, "spill")})
	var callCtx context.Context
	inv := hub.Chain(hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		callCtx = ctx
		return &hub.Result{}, nil
	}), m.Middleware())
	if _, err := inv.Invoke(context.Background(), attemptCall("c")); err != nil {
		t.Fatal(err)
	}
	refresh := m.AttemptMiddleware()(hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		if s := m.Stats(); s.Open != 0 {
			t.Errorf("%d intents open for an attempt after its call ended, want 0", s.Open)
		}
		return &hub.Result{}, nil
	}))
	refresh.Invoke(context.WithoutCancel(callCtx), attemptCall("c"))
}
