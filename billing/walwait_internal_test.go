package billing

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// pause stops the WAL's writer: lines appended from now on stay pending
// until resume.
func (w *wal) pause()  { close(w.quit); <-w.done }
func (w *wal) resume() { w.start() }

// testMeter is a meter over a ledger in memory, closed with the test.
func testMeter(t *testing.T) *Meter {
	m, err := NewMeter(&appendLedger{}, &MeterOptions{SpillDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// imageCall is a call of doubao's generate_image; answered gives it one
// attempt that answered.
func imageCall() *hub.Call {
	return &hub.Call{ID: "c1", Tenant: "acme", Name: "doubao__generate_image",
		Tool: &registry.Tool{Vendor: "doubao", Def: registry.ToolDef{Name: "generate_image"}}, Trace: &hub.Trace{}}
}

func answered(c *hub.Call) (*hub.Result, error) {
	c.Trace.Attempts = append(c.Trace.Attempts, hub.Attempt{Vendor: "doubao", Tool: "generate_image", Outcome: "ok"})
	return &hub.Result{Provenance: hub.Provenance{Vendor: "doubao", Tool: "generate_image"}}, nil
}

// TestCallWaitsForItsLines checks the two waits that make a call exact:
// the vendor hears of an attempt only once its intent is written, and
// the call returns only once its events are. Another call is in the
// meter, so the lines go through the WAL's writer; it is paused around
// each, and the call must be found waiting.
func TestCallWaitsForItsLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := testMeter(t)
		m.calls.Add(1) // another call in flight
		defer m.calls.Add(-1)
		var atVendor, returned atomic.Bool
		inv := hub.Chain(hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			atVendor.Store(true)
			m.w.pause() // the call's events will wait
			return answered(c)
		}), m.Middleware(), m.AttemptMiddleware())
		c := imageCall()

		m.w.pause()
		go func() {
			inv.Invoke(context.Background(), c)
			returned.Store(true)
		}()
		synctest.Wait()
		if atVendor.Load() {
			t.Fatal("the vendor was called before the attempt's intent was written")
		}
		m.w.resume()
		synctest.Wait()
		if !atVendor.Load() {
			t.Fatal("the vendor was not called once the intent was written")
		}
		if returned.Load() {
			t.Fatal("the call returned before its events were written")
		}
		evs, _, err := readWAL(m.w.segments, m.w.seqNow())
		if err != nil || len(evs) != 1 || evs[0].Outcome != OutcomeUnknown {
			t.Fatalf("WAL while the call is at the vendor: %v, %v; want its intent only", evs, err)
		}
		m.w.resume()
		synctest.Wait()
		if !returned.Load() {
			t.Fatal("the call did not return once its events were written")
		}
		evs, _, err = readWAL(m.w.segments, m.w.seqNow())
		if err != nil || len(evs) != 2 || !evs[1].Merged() {
			t.Fatalf("WAL after the call: %d events, %v; want the intent and the call with its one attempt (one line)", len(evs), err)
		}
	})
}

// TestLoneCallWritesItsLines checks that a call alone in the meter
// writes its own WAL lines, with the same waits as through the writer:
// the writer is paused throughout, the vendor is called with the
// attempt's intent in the WAL and the call returns with its events in it.
func TestLoneCallWritesItsLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := testMeter(t)
		var atVendor []Event
		inv := hub.Chain(hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			atVendor, _, _ = readWAL(m.w.segments, m.w.seqNow())
			return answered(c)
		}), m.Middleware(), m.AttemptMiddleware())
		c := imageCall()

		m.w.pause()
		defer m.w.resume()
		var returned atomic.Bool
		go func() {
			inv.Invoke(context.Background(), c)
			returned.Store(true)
		}()
		synctest.Wait()
		if !returned.Load() {
			t.Fatal("a lone call waited for the WAL's writer")
		}
		if len(atVendor) != 1 || atVendor[0].Outcome != OutcomeUnknown {
			t.Fatalf("WAL when the vendor was called: %v; want the attempt's intent", atVendor)
		}
		evs, _, err := readWAL(m.w.segments, m.w.seqNow())
		if err != nil || len(evs) != 2 || !evs[1].Merged() {
			t.Fatalf("WAL after the call: %d events, %v; want the intent and the call with its one attempt (one line)", len(evs), err)
		}
	})
}
