package govern_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/govern"
)

// TestLogQueueSameLines: the lines a burst of calls logs through the
// queue, encoded by its writer (straight from the line for the JSON
// handler, from the record for others), are the lines the calls log
// themselves without it, byte for byte and in the same order, all of them
// once the governor is closed; with a queue too small for the burst, the
// calls that find it full log their own lines, and none is lost.
func TestLogQueueSameLines(t *testing.T) {
	handlers := map[string]func(w *syncBuffer) slog.Handler{
		"govern": func(w *syncBuffer) slog.Handler { return govern.NewJSONHandler(w, nil) },
		"slog":   func(w *syncBuffer) slog.Handler { return slog.NewJSONHandler(w, nil) },
	}
	run := func(t *testing.T, h func(*syncBuffer) slog.Handler, queue int) string {
		var got string
		synctest.Test(t, func(t *testing.T) { // each run starts at the same (fake) time
			w := &syncBuffer{}
			e := newLogEnv(t, h(w), queue)
			e.burst(40)
			if err := e.gov.Close(); err != nil {
				t.Fatal(err)
			}
			got = w.String()
		})
		return got
	}
	want := run(t, handlers["govern"], 0)
	if n := len(lines(want)); n != 40*8 {
		t.Fatalf("%d lines without a queue, want %d", n, 40*8)
	}
	for _, field := range []string{`"findings":`, `"arguments":{"city":"fail-Oslo"}`, `"trace_id":"0102030405060708090a0b0c0d0e0f10","span_id":"0a0b0c0d01020304"`,
		`"plan_id":"plan-7"`, `"priority":"batch"`, `"code":"upstream_error","error":"vendor knows no [redacted]"`, `"tenant":"t\"q<&>\u2028"`, `"latency_ms":1.5,`} {
		if !strings.Contains(want, field) {
			t.Errorf("the burst logs no %s", field)
		}
	}
	for name, h := range handlers {
		base := want
		if name != "govern" {
			base = run(t, h, 0)
			if base != want {
				t.Fatalf("%s without a queue: lines differ from govern's", name)
			}
		}
		t.Run(name, func(t *testing.T) {
			if got := run(t, h, govern.DefaultLogQueue); got != base {
				t.Errorf("queued lines differ:\n got %s\nwant %s", got, base)
			}
			// A queue of 5: the writer is behind most of the time.
			got, wantSorted := lines(run(t, h, 5)), lines(base)
			slices.Sort(got)
			slices.Sort(wantSorted)
			if !slices.Equal(got, wantSorted) {
				t.Errorf("with a full queue: %d lines, want %d (or different)", len(got), len(wantSorted))
			}
		})
	}
}

// blockingHandler is a JSON handler whose Handle waits, for the line of
// the call with id block, until release is closed.
type blockingHandler struct {
	slog.Handler
	block   string
	entered chan struct{}
	release chan struct{}
}

func (h *blockingHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "call_id" && a.Value.String() == h.block {
			close(h.entered)
			<-h.release
		}
		return a.Key != "call_id"
	})
	return h.Handler.Handle(ctx, r)
}

// TestLogQueueCallsDoNotWaitForTheLog: with a queue, a call returns
// while its line's handler is blocked (a stuck log destination holds no
// call), later lines queue behind it, those that find the queue full are
// logged by their calls and counted, and Close writes everything. Without
// the queue, the first call would wait for its line (synctest reports the
// deadlock).
func TestLogQueueCallsDoNotWaitForTheLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &syncBuffer{}
		h := &blockingHandler{Handler: govern.NewJSONHandler(w, nil), block: "c0", entered: make(chan struct{}), release: make(chan struct{})}
		e := newLogEnv(t, h, 2)
		call := func(id string) {
			if _, err := e.gw.Call(context.Background(), &hub.Call{ID: id, Tenant: "acme", Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}); err != nil {
				t.Fatal(err)
			}
		}
		call("c0") // returns: its line waits in the queue
		<-h.entered
		for _, id := range []string{"c1", "c2", "c3", "c4"} {
			call(id) // c1 and c2 queue, c3 and c4 find the queue full
		}
		if got := lines(w.String()); len(got) != 2 || !strings.Contains(got[0], `"call_id":"c3"`) || !strings.Contains(got[1], `"call_id":"c4"`) {
			t.Errorf("before the handler is released, want the lines of c3 and c4 (the full queue's), got:\n%s", w.String())
		}
		if got := inlineLines(t, e.gov); got != 2 {
			t.Errorf("toolhub_decision_log_inline_total %v, want 2", got)
		}
		close(h.release)
		e.gov.Close()
		got := lines(w.String())
		if len(got) != 5 || !strings.Contains(got[2], `"call_id":"c0"`) || !strings.Contains(got[3], `"call_id":"c1"`) || !strings.Contains(got[4], `"call_id":"c2"`) {
			t.Errorf("after Close, want c3, c4 then c0, c1, c2, got:\n%s", w.String())
		}
		call("c5") // after Close, a call logs its own line
		if got := lines(w.String()); len(got) != 6 || !strings.Contains(got[5], `"call_id":"c5"`) {
			t.Errorf("a call after Close: its line is not in the log when it returns:\n%s", w.String())
		}
	})
}

// TestLogQueueFlush: once Flush returns, the lines of the calls that
// returned before it are in the log, whenever the writer would have
// taken them; the writer stops when calls stop.
func TestLogQueueFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &syncBuffer{}
		e := newLogEnv(t, govern.NewJSONHandler(w, nil), govern.DefaultLogQueue)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 25 {
					_, _ = e.gw.Call(context.Background(), &hub.Call{ID: string(rune('a'+g)) + "-" + string(rune('a'+i)), Tenant: "acme", Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}})
				}
			})
		}
		wg.Wait()
		e.gov.Flush()
		got := lines(w.String())
		if len(got) != 100 {
			t.Fatalf("after Flush, %d lines, want 100", len(got))
		}
		slices.Sort(got)
		if len(slices.Compact(got)) != 100 {
			t.Error("a line is logged twice")
		}
		// The bubble ends only if its goroutines have: the writer stops by
		// itself once no line comes.
		time.Sleep(time.Second)
	})
}

// inlineLines reads toolhub_decision_log_inline_total from g's metrics.
func inlineLines(t *testing.T, g *govern.Governor) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	g.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "toolhub_decision_log_inline_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatal("no toolhub_decision_log_inline_total in /metrics")
	return 0
}

// TestLogQueueKeepsDebugArguments: a queued line of a debugged tenant logs
// the arguments as they were when the call returned, though the caller
// changes its map before the writer encodes the line.
func TestLogQueueKeepsDebugArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &syncBuffer{}
		e := newLogEnv(t, govern.NewJSONHandler(w, nil), 8)
		c := hub.Call{Tenant: "debugged", Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}
		if _, err := e.gw.Call(context.Background(), &c); err != nil {
			t.Fatal(err)
		}
		c.Arguments["city"] = "changed-after"
		e.gov.Flush()
		if got := w.String(); !strings.Contains(got, `"arguments":{"city":"Oslo"}`) {
			t.Errorf("the line logs %s, want the arguments of the call", got)
		}
		_ = e.gov.Close() // its writer stops
	})
}

// countingWriter counts the writes made to it.
type countingWriter struct {
	syncBuffer
	writes atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes.Add(1)
	return w.syncBuffer.Write(p)
}

// TestLogQueueBatchesCallsThatComeOneAtATime: calls that come one at a
// time (each takes 1.5ms here) share the writer's writes. It used to wake
// every millisecond and write each call's line on its own (one write and
// one goroutine switch a call, beside the call path, in a c=1 trace).
func TestLogQueueBatchesCallsThatComeOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &countingWriter{}
		e := newLogEnv(t, govern.NewJSONHandler(w, nil), govern.DefaultLogQueue)
		const calls = 200
		for i := range calls {
			if _, err := e.gw.Call(context.Background(), &hub.Call{ID: "c" + strconv.Itoa(i), Tenant: "acme", Name: "weather-a__current", Arguments: map[string]any{"city": "Oslo"}}); err != nil {
				t.Fatal(err)
			}
		}
		e.gov.Close()
		if got := len(lines(w.String())); got != calls {
			t.Fatalf("%d lines, want %d", got, calls)
		}
		if n := w.writes.Load(); n > calls/4 {
			t.Errorf("%d writes for %d calls made one at a time; want at most %d (lines share writes)", n, calls, calls/4)
		}
	})
}
