package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub"
)

// FailoverConfig is the lab config of the failover drill: weather.current
// backed by weather-a then weather-b, with short cool-downs so recovery
// fits in a drill. Probes are off: this drill is about the breaker.
const FailoverConfig = `
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    timeout: 300ms
    probe: {disabled: true}
  - id: weather-b
    mcp: {transport: http, url: "{{vendors}}/weather-b/mcp"}
    probe: {disabled: true}
capabilities:
  - name: weather.current
    input_schema: {type: object, required: [city], properties: {city: {type: string}}}
    chain:
      - tool: weather-a/current_weather
      - tool: weather-b/current_weather
        args: [{from: /city, to: /location}]
        result: [{from: /location, to: /city}, {from: /temperature, to: /temp_c}]
governance:
  breaker: {cool_down: 500ms, max_cool_down: 2s}
  ramp_interval: 200ms
  retry: {max: 0}
`

// FailoverReport is what the failover drill measured.
type FailoverReport struct {
	Fault         Fault         // what happened to the primary
	Rate          float64       // offered calls/s
	Calls         int64         // calls made
	ClientErrors  int64         // calls that failed at the client
	DuringFault   int64         // calls made while the primary was down
	FaultOK       int64         // of those, answered (by the secondary)
	DetectAfter   time.Duration // primary down → its breaker open
	FallbackAfter time.Duration // primary down → first answer from the secondary
	PrimaryCalls  int64         // calls that reached the primary while its breaker was open
	RecoverAfter  time.Duration // primary back → breaker closed and ramp at 100%
	EventsLost    int64         // answered calls missing from the ledger (must be 0)
	EventsExtra   int64         // ledger call events beyond the calls made (must be 0)
}

func (r FailoverReport) String() string {
	return fmt.Sprintf("primary %s at %.0f calls/s: %d calls, %d client errors; success during the fault %d/%d (%.1f%%); "+
		"breaker open %v after the fault; first fallback answer after %v; %d calls reached the primary while open; "+
		"recovered to 100%% %v after the primary came back; usage events lost %d, duplicated %d",
		r.Fault, r.Rate, r.Calls, r.ClientErrors, r.FaultOK, r.DuringFault, 100*float64(r.FaultOK)/float64(max(r.DuringFault, 1)),
		r.DetectAfter.Round(time.Millisecond), r.FallbackAfter.Round(time.Millisecond), r.PrimaryCalls, r.RecoverAfter.Round(time.Millisecond),
		r.EventsLost, r.EventsExtra)
}

// Ok reports whether every call was answered and every usage event kept.
func (r FailoverReport) Ok() bool {
	return r.ClientErrors == 0 && r.EventsLost == 0 && r.EventsExtra == 0
}

// Failover drives weather.current at rate calls/s, injects fault into
// weather-a (fail: tool errors; slow: answers after its timeout; garbage:
// output that breaks its schema; http500 …), waits for its breaker to
// open, holds the fault for hold, heals weather-a and waits for full
// recovery. Then it counts the ledger's call events against the calls made.
func Failover(ctx context.Context, l *Lab, rate float64, hold time.Duration, fault Fault) (FailoverReport, error) {
	rep := FailoverReport{Rate: rate, Fault: fault}
	tr := startFailoverTraffic(ctx, l.App.Gateway, rate)
	defer tr.stop()

	sleep(ctx, time.Second) // healthy traffic first
	start := time.Now()
	tr.faultAt.Store(start.UnixNano())
	if err := l.SetMode("weather-a", fault); err != nil {
		return rep, err
	}
	opened, err := waitFor(ctx, 30*time.Second, func() bool { return l.App.Gov.Status("weather-a").Breaker.State == "open" })
	if err != nil {
		return rep, fmt.Errorf("the breaker of weather-a never opened: %w", err)
	}
	rep.DetectAfter = opened.Sub(start)
	atOpen := l.Vendors["weather-a"].Counters().CallsTotal
	sleep(ctx, hold)
	rep.PrimaryCalls = l.Vendors["weather-a"].Counters().CallsTotal - atOpen

	back := time.Now()
	tr.faultOver.Store(true)
	if err := l.SetMode("weather-a", FaultOK); err != nil {
		return rep, err
	}
	recovered, err := waitFor(ctx, 60*time.Second, func() bool {
		st := l.App.Gov.Status("weather-a")
		return st.Breaker.State == "closed" && st.Ramp.Percent >= 100
	})
	if err != nil {
		return rep, fmt.Errorf("weather-a never recovered: %+v: %w", l.App.Gov.Status("weather-a"), err)
	}
	rep.RecoverAfter = recovered.Sub(back)
	tr.stop()
	rep.Calls, rep.ClientErrors, rep.DuringFault, rep.FaultOK = tr.calls.Load(), tr.errs.Load(), tr.during.Load(), tr.dOK.Load()
	inLedger, err := l.LedgerCalls(ctx)
	if err != nil {
		return rep, err
	}
	if d := rep.Calls - inLedger; d > 0 {
		rep.EventsLost = d
	} else {
		rep.EventsExtra = -d
	}
	if f := tr.firstFallbk.Load(); f != 0 {
		rep.FallbackAfter = time.Unix(0, f).Sub(start)
	}
	return rep, nil
}

// failoverTraffic calls weather.current at a steady rate, counting the
// calls made while the fault is on and when weather-b first answered.
type failoverTraffic struct {
	faultAt     atomic.Int64 // unix nanos; 0 before the fault
	faultOver   atomic.Bool
	firstFallbk atomic.Int64
	calls, errs atomic.Int64
	during, dOK atomic.Int64

	wg    sync.WaitGroup
	stopc chan struct{}
	ended chan struct{}
}

func startFailoverTraffic(ctx context.Context, gw *hub.Gateway, rate float64) *failoverTraffic {
	t := &failoverTraffic{stopc: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(t.ended)
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for {
			select {
			case <-t.stopc:
				t.wg.Wait()
				return
			case <-ctx.Done():
				t.wg.Wait()
				return
			case <-tick.C:
			}
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				t.call(ctx, gw)
			}()
		}
	}()
	return t
}

func (t *failoverTraffic) call(ctx context.Context, gw *hub.Gateway) {
	inFault := t.faultAt.Load() != 0 && !t.faultOver.Load()
	res, err := gw.Call(ctx, &hub.Call{Tenant: "default", Name: "weather.current", Arguments: map[string]any{"city": "Oslo"}})
	t.calls.Add(1)
	if inFault {
		t.during.Add(1)
	}
	if err != nil {
		t.errs.Add(1)
		return
	}
	if inFault {
		t.dOK.Add(1)
	}
	if res.Provenance.Vendor == "weather-b" && t.faultAt.Load() != 0 {
		t.firstFallbk.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// stop ends the traffic and waits for the calls in flight; it may be
// called again.
func (t *failoverTraffic) stop() {
	select {
	case <-t.ended:
	default:
		close(t.stopc)
		<-t.ended
	}
}

// waitFor polls cond every millisecond and returns when it first held.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		if cond() {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-t.C:
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// LedgerCalls flushes the meter and counts the call events in the ledger.
func (l *Lab) LedgerCalls(ctx context.Context) (int64, error) {
	if err := l.App.Meter.Flush(ctx); err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	q := billing.ReportQuery{From: time.Now().Add(-24 * time.Hour), To: time.Now().Add(time.Hour), GroupBy: []string{"tenant"}, Format: "json"}
	if err := billing.Report(ctx, l.App.Ledger, &buf, q); err != nil {
		return 0, err
	}
	var rep struct {
		Rows []struct {
			Calls int64 `json:"calls"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(buf.Bytes(), &rep); err != nil {
		return 0, fmt.Errorf("ledger report: %v", err)
	}
	var n int64
	for _, r := range rep.Rows {
		n += r.Calls
	}
	return n, nil
}
