package billing_test

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	_ "modernc.org/sqlite"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
	"github.com/toolhub/toolhub/billing/sqlledger"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

func openLedger(t testing.TB, dir string) *sqlledger.Ledger {
	t.Helper()
	l, err := sqlledger.Open(context.Background(), filepath.Join(dir, "ledger.db"), &sqlledger.Options{BusyTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

var quiet = slog.New(slog.DiscardHandler)

func newMeter(t testing.TB, l billing.Ledger, opts *billing.MeterOptions) *billing.Meter {
	t.Helper()
	if opts == nil {
		opts = &billing.MeterOptions{}
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	m, err := billing.NewMeter(l, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// lockLedger takes SQLite's write lock on the ledger from another
// connection, as another process would: the ledger cannot write until
// unlock is called.
func lockLedger(t *testing.T, path string) (unlock func()) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	done := false
	unlock = func() {
		if done {
			return
		}
		done = true
		if _, err := conn.ExecContext(context.Background(), "COMMIT"); err != nil {
			t.Error(err)
		}
		conn.Close()
		db.Close()
	}
	t.Cleanup(unlock)
	return unlock
}

func total(t *testing.T, l billing.Ledger) billing.Row {
	t.Helper()
	rows, err := l.Rollup(context.Background(), billing.RollupQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var r billing.Row
	for _, x := range rows {
		if x.Currency == "USD" {
			r = x
		}
	}
	return r
}

func usd(evs []billing.Event) billing.Row {
	var u []billing.Event
	for _, e := range evs {
		if e.Currency == "USD" {
			u = append(u, e)
		}
	}
	r := ledgertest.Totals(u)
	r.Currency = "USD"
	return r
}

func TestMeterSpillsWhileLedgerLockedThenReplays(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openLedger(t, dir)
	m := newMeter(t, l, &billing.MeterOptions{SpillDir: filepath.Join(dir, "spill"), Buffer: 16, Batch: 8, RetryInterval: time.Hour})
	evs := ledgertest.Fixture()

	unlock := lockLedger(t, l.Path())
	for _, e := range evs {
		m.Record(e)
	}
	if err := m.Flush(ctx); err == nil {
		t.Fatal("Flush with the ledger locked: no error")
	}
	s := m.Stats()
	if s.Recorded != int64(len(evs)) || s.Written != 0 || s.Spilled != int64(len(evs)) || s.Dropped != 0 {
		t.Fatalf("stats while locked = %+v; want all %d spilled", s, len(evs))
	}
	if got := total(t, l); got.Calls != 0 {
		t.Fatalf("ledger has %d calls while locked", got.Calls)
	}

	unlock()
	if err := m.Flush(ctx); err != nil {
		t.Fatalf("Flush after unlock: %v", err)
	}
	if s := m.Stats(); s.Replayed != int64(len(evs)) {
		t.Errorf("replayed %d, want %d", s.Replayed, len(evs))
	}
	if diff := cmp.Diff(usd(evs), total(t, l)); diff != "" {
		t.Errorf("totals after replay (-want +got):\n%s", diff)
	}
	if ls := l.Stats(); ls.Appended != int64(len(evs)) || ls.Duplicates != 0 {
		t.Errorf("ledger stats %+v", ls)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "spill", "*.jsonl")); len(segs) != 0 {
		t.Errorf("spill segments left after replay: %v", segs)
	}

	// Replaying the same events again changes nothing.
	for _, e := range evs {
		m.Record(e)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(usd(evs), total(t, l)); diff != "" {
		t.Errorf("totals after a duplicate replay (-want +got):\n%s", diff)
	}
	if ls := l.Stats(); ls.Duplicates != int64(len(evs)) {
		t.Errorf("duplicates = %d, want %d", ls.Duplicates, len(evs))
	}
}

func TestMeterReplaysSpillOnStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spillDir := filepath.Join(dir, "spill")
	l := openLedger(t, dir)
	evs := ledgertest.Fixture()

	unlock := lockLedger(t, l.Path())
	m1 := newMeter(t, l, &billing.MeterOptions{SpillDir: spillDir, RetryInterval: time.Hour})
	for _, e := range evs {
		m1.Record(e)
	}
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	if s := m1.Stats(); s.Spilled != int64(len(evs)) {
		t.Fatalf("first meter spilled %d, want %d", s.Spilled, len(evs))
	}
	// A torn line at the end of the segment, as a crash mid-write leaves.
	segs, _ := filepath.Glob(filepath.Join(spillDir, "*.jsonl"))
	if len(segs) != 1 {
		t.Fatalf("segments = %v", segs)
	}
	f, err := os.OpenFile(segs[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("0badc0de {\"key\":\"torn")
	f.Close()
	unlock()

	m2 := newMeter(t, l, &billing.MeterOptions{SpillDir: spillDir, RetryInterval: time.Hour})
	if err := m2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if s := m2.Stats(); s.Replayed != int64(len(evs)) || s.Corrupt != 1 {
		t.Errorf("second meter stats %+v; want %d replayed, 1 corrupt", s, len(evs))
	}
	if diff := cmp.Diff(usd(evs), total(t, l)); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
}

func TestMeterWithoutSpillDropsAndCounts(t *testing.T) {
	dir := t.TempDir()
	l := openLedger(t, dir)
	unlock := lockLedger(t, l.Path())
	m := newMeter(t, l, &billing.MeterOptions{Buffer: 4, RetryInterval: time.Hour})
	for _, e := range ledgertest.Fixture()[:10] {
		m.Record(e)
	}
	m.Flush(context.Background())
	unlock()
	if s := m.Stats(); s.Dropped != 10 || s.Written != 0 {
		t.Errorf("stats %+v; want 10 dropped", s)
	}
}

func book(t testing.TB) *billing.PriceBook {
	t.Helper()
	cache := billing.Micros(100)
	b, err := billing.NewPriceBook(billing.Config{
		CachePrice: 50,
		Prices: []billing.VersionConfig{{
			Version: "2026-12", Effective: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), CachePrice: &cache,
			Entries: []billing.PriceEntry{
				{Vendor: "doubao", Tool: "generate_image",
					Tenant: billing.Rate{PerCall: 20_000, PerUnit: map[string]billing.Micros{"images": 40_000}},
					Payout: billing.Rate{PerCall: 10_000, PerUnit: map[string]billing.Micros{"images": 15_000}}, Estimate: billing.Units{"images": 4}},
				{Vendor: "sd", Tenant: billing.Rate{PerCall: 20_000, PerUnit: map[string]billing.Micros{"images": 40_000}},
					Payout: billing.Rate{PerCall: 2_000}},
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMiddlewareEvents runs a capability call that falls back from doubao
// to sd through the meter and the budgets, and checks the events stored.
func TestMiddlewareEvents(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openLedger(t, dir)
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return at.Add(1500 * time.Millisecond) }
	pricer := billing.NewPricer(book(t), nil)
	m := newMeter(t, l, &billing.MeterOptions{Pricer: pricer, Now: now})
	b, err := billing.NewBudgets([]billing.BudgetRule{
		{Tenant: "acme", Period: billing.PeriodMonth, Limit: 250_000},
		{Tenant: "acme", Vendor: "doubao", Period: billing.PeriodDay, Limit: 1_000_000},
	}, &billing.BudgetOptions{Pricer: pricer, Now: now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	capability := &registry.Capability{Name: "image.generate", Chain: []registry.ChainStep{{Tool: "doubao/generate_image"}, {Tool: "sd/txt2img"}}}
	inv := hub.Chain(hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		c.Trace.Attempts = append(c.Trace.Attempts,
			hub.Attempt{Vendor: "doubao", Tool: "generate_image", Outcome: "timeout", LatencyMS: 1000, Error: "deadline exceeded"},
			hub.Attempt{Vendor: "sd", Tool: "txt2img", Outcome: "ok", LatencyMS: 400})
		return &hub.Result{Structured: map[string]any{"images": 2.0, "url": "x"}, Provenance: hub.Provenance{Vendor: "sd", Tool: "txt2img", Fallback: true}}, nil
	}), m.Middleware(), b.Middleware())

	// The estimate is 0.02 + 4 × 0.04 = 0.18 per call and the month budget
	// 0.25: the first call passes and costs 0.02 + 2 × 0.04 = 0.10; the
	// second would reach 0.10 + 0.18 > 0.25 and is refused.
	c1 := &hub.Call{ID: "c1", Tenant: "acme", Capability: capability, Start: at, Trace: &hub.Trace{}}
	if _, err := inv.Invoke(ctx, c1); err != nil {
		t.Fatal(err)
	}
	c2 := &hub.Call{ID: "c2", Tenant: "acme", Capability: capability, Start: at, Trace: &hub.Trace{}}
	_, err = inv.Invoke(ctx, c2)
	if hub.CodeOf(err) != hub.CodeBudgetExceeded {
		t.Fatalf("second call: %v, want budget_exceeded", err)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var got []billing.Event
	l.Query(ctx, billing.Filter{}, func(e billing.Event) error { got = append(got, e); return nil })
	want := []billing.Event{
		{Key: "c1/1", CallID: "c1", Kind: billing.KindAttempt, Attempt: 1, Tenant: "acme", Vendor: "doubao", Tool: "generate_image",
			Capability: "image.generate", Outcome: billing.OutcomeTimeout, Reason: "timeout: deadline exceeded", Latency: time.Second,
			Units: billing.Units{"calls": 1}, Currency: "USD", PriceVersion: "2026-12"},
		{Key: "c1/2", CallID: "c1", Kind: billing.KindAttempt, Attempt: 2, Tenant: "acme", Vendor: "sd", Tool: "txt2img",
			Capability: "image.generate", Outcome: billing.OutcomeOK, Latency: 400 * time.Millisecond,
			Units: billing.Units{"calls": 1, "images": 2}, VendorUnitPrice: 2_000, VendorCost: 2_000, Currency: "USD", PriceVersion: "2026-12"},
		{Key: "c1/call", CallID: "c1", Kind: billing.KindCall, Tenant: "acme", Vendor: "sd", Tool: "txt2img",
			Capability: "image.generate", Outcome: billing.OutcomeFallback, Latency: 1500 * time.Millisecond,
			Units: billing.Units{"calls": 1, "images": 2}, TenantUnitPrice: 20_000, TenantCost: 100_000, Currency: "USD", PriceVersion: "2026-12"},
		{Key: "c2/call", CallID: "c2", Kind: billing.KindCall, Tenant: "acme", // no vendor was tried
			Capability: "image.generate", Outcome: billing.OutcomeRejected, Latency: 1500 * time.Millisecond,
			Units: billing.Units{"calls": 1}, Currency: "USD", PriceVersion: "2026-12"},
	}
	ignore := cmpopts.IgnoreFields(billing.Event{}, "Time", "Ingested", "Reason")
	if diff := cmp.Diff(want, got, ignore); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(got) == 4 && got[3].Reason == "" {
		t.Errorf("rejected event has no reason")
	}
	if len(got) == 4 {
		t.Logf("rejection reason: %s", got[3].Reason)
	}
	if s := b.Stats(); s.Refused != 1 {
		t.Errorf("budget stats %+v", s)
	}
	if spent, _ := b.Spent(ctx, "acme", "", billing.PeriodMonth, at); spent != 100_000 {
		t.Errorf("month spent %v, want 0.100000 (settled to the real cost)", spent)
	}
	if spent, _ := b.Spent(ctx, "acme", "doubao", billing.PeriodDay, at); spent != 0 {
		t.Errorf("doubao day spent %v, want 0 (sd answered)", spent)
	}
}

// TestCanceledAttemptIsUnknown: an attempt cut off by its caller going away
// (or by a job's worker losing its lease) may have been done at the vendor
// or not: it is recorded unknown, not error, and paid nothing.
func TestCanceledAttemptIsUnknown(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t, t.TempDir())
	m := newMeter(t, l, &billing.MeterOptions{Pricer: billing.NewPricer(book(t), nil)})
	inv := hub.Chain(hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		c.Trace.Attempts = append(c.Trace.Attempts,
			hub.Attempt{Vendor: "sd", Tool: "txt2img", Outcome: hub.OutcomeFor(hub.CodeCanceled), Error: "call canceled"})
		return nil, &hub.Error{Code: hub.CodeCanceled, Message: "call canceled"}
	}), m.Middleware())
	_, _ = inv.Invoke(ctx, &hub.Call{ID: "c1", Tenant: "acme", Name: "sd__txt2img", Start: time.Now(), Trace: &hub.Trace{}})
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var attempts []billing.Event
	l.Query(ctx, billing.Filter{}, func(e billing.Event) error {
		if e.Kind == billing.KindAttempt {
			attempts = append(attempts, e)
		}
		return nil
	})
	if len(attempts) != 1 || attempts[0].Outcome != billing.OutcomeUnknown || attempts[0].VendorCost != 0 {
		t.Errorf("attempts = %+v; want one unknown attempt, paid nothing", attempts)
	}
}

// The writer lingers after a batch's first event, but not once a batch's
// worth is queued, nor when asked to Flush or Close: with an hour's
// linger, a full batch is written at once and Flush and Close return.
func TestMeterLingerEndsEarly(t *testing.T) {
	l := openLedger(t, t.TempDir())
	m := newMeter(t, l, &billing.MeterOptions{Linger: time.Hour, Batch: 8, Buffer: 64, SpillDir: t.TempDir()})
	for i := range 8 {
		m.Record(ledgertest.Synthetic(i))
	}
	for deadline := time.Now().Add(time.Minute); m.Stats().Written < 8; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a full batch waited for the linger: %+v", m.Stats())
		}
	}
	m.Record(ledgertest.Synthetic(8))
	if err := m.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.Written != 9 {
		t.Errorf("after Flush: %+v, want 9 written", st)
	}
	m.Record(ledgertest.Synthetic(9))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.Written != 10 {
		t.Errorf("after Close: %+v, want 10 written", st)
	}
}

// TestMeterBufferCostsWhatItHolds: the buffer's memory follows the events
// queued, not Buffer. A channel of 65536 events was 19 MB of heap from the
// start, which the garbage collector scanned on every cycle.
func TestMeterBufferCostsWhatItHolds(t *testing.T) {
	l := openLedger(t, t.TempDir())
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	m := newMeter(t, l, &billing.MeterOptions{Linger: time.Hour}) // Buffer: 65536 events
	for i := range 100 {
		m.Record(ledgertest.Synthetic(i))
	}
	grown := heap()
	if grown > before && grown-before > 4<<20 {
		t.Errorf("a meter holding 100 events grew the heap by %d KiB", (grown-before)>>10)
	}
	if err := m.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats(); st.Written != 100 {
		t.Errorf("%+v, want 100 written", st)
	}
}
