// Package loadgen measures toolhub over HTTP: the same MCP tool call, made by
// the same load generator in the same process, directly against a vendor,
// through a bare reverse proxy and through the hub, so they can be compared
// as ratios ([Run]); and the hub's memory for many open sessions ([Hold]).
package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Options of one run. Zero fields mean the defaults.
type Options struct {
	URL         string         // MCP streamable HTTP endpoint
	Tool        string         // tool to call
	Arguments   map[string]any // its arguments
	Concurrency int            // clients, each with its own session; default 8
	Duration    time.Duration  // measured time; default 5s
	Warmup      time.Duration  // unmeasured time first; default 1s
	Progress    io.Writer      // a progress line per second; nil: none
	// Protocol is the MCP revision the clients pin (e.g. "2025-03-26");
	// "" lets the SDK negotiate from its newest.
	Protocol string
	// MeasureStart and MeasureEnd, if set, are called as the measured
	// phase starts and ends (after the warm-up; before the clients stop),
	// to sample what the phase costs elsewhere, e.g. a process's CPU time.
	MeasureStart, MeasureEnd func()
	// Rate, when positive, paces the calls to about Rate a second in all
	// (each client starts one every Concurrency/Rate, and skips the calls
	// it fell behind by rather than bursting), instead of as fast as the
	// clients go: a steady load below saturation, for a soak.
	Rate float64
	// Window and OnWindow, when both set, report the calls of each Window
	// of the measured phase as it ends: calls/s, errors and percentiles
	// of that window alone (Latencies nil), e.g. a soak's p99 over time.
	// OnWindow runs on Run's goroutine; a slow one delays the next.
	Window   time.Duration
	OnWindow func(Result)
}

// Result of one run.
type Result struct {
	Name     string
	Calls    int64
	Errors   int64
	Elapsed  time.Duration
	PerSec   float64
	P50, P99 time.Duration
	// Latencies are the measured calls' latencies, sorted: what Merge
	// takes the percentiles of several runs from.
	Latencies []time.Duration
}

// Merge is the result of runs of one path taken turn about with others
// (so that a slow spell of the machine does not fall on one path alone):
// calls and time added up, percentiles over every run's latencies.
func Merge(name string, rs ...Result) Result {
	m := Result{Name: name}
	for _, r := range rs {
		m.Calls += r.Calls
		m.Errors += r.Errors
		m.Elapsed += r.Elapsed
		m.Latencies = append(m.Latencies, r.Latencies...)
	}
	if m.Elapsed > 0 {
		m.PerSec = float64(m.Calls) / m.Elapsed.Seconds()
	}
	m.setLatencies(m.Latencies)
	return m
}

// setLatencies sorts lat and keeps it, with its percentiles.
func (r *Result) setLatencies(lat []time.Duration) {
	slices.Sort(lat)
	r.Latencies = lat
	if n := len(lat); n > 0 {
		r.P50, r.P99 = lat[n*50/100], lat[n*99/100]
	}
}

func (r Result) String() string {
	return fmt.Sprintf("%-22s %8.0f calls/s  p50 %7.3f ms  p99 %7.3f ms  (%d calls, %d errors)",
		r.Name, r.PerSec, ms(r.P50), ms(r.P99), r.Calls, r.Errors)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Run makes calls from Concurrency clients until Duration passes.
func Run(ctx context.Context, name string, o Options) (Result, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	// One transport for every client, keeping as many idle connections as
	// there are clients: http.DefaultTransport keeps two per host, and the
	// others would be redialled on every call, measuring TCP set-up (on
	// both sides) instead of the call.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2*o.Concurrency + 2
	defer tr.CloseIdleConnections()
	clients, closeClients, err := connect(ctx, o, &http.Client{Transport: tr})
	defer closeClients()
	if err != nil {
		return Result{}, err
	}
	s := &run{lat: make([]time.Duration, 0, 1<<16), windows: o.Window > 0 && o.OnWindow != nil}
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: o.Tool, Arguments: o.Arguments}}
	var period time.Duration // between one client's calls, when paced
	if o.Rate > 0 {
		period = time.Duration(float64(time.Second) * float64(o.Concurrency) / o.Rate)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	began := time.Now()
	for i, c := range clients {
		next := began.Add(period * time.Duration(i) / time.Duration(len(clients))) // staggered
		wg.Go(func() { s.calls(ctx, c, req, next, period, stop) })
	}
	time.Sleep(o.Warmup)
	if o.MeasureStart != nil {
		o.MeasureStart()
	}
	elapsed := s.measure(ctx, name, o)
	if o.MeasureEnd != nil {
		o.MeasureEnd()
	}
	close(stop)
	wg.Wait()
	if o.Progress != nil {
		fmt.Fprintln(o.Progress)
	}
	r := Result{Name: name, Calls: s.ok.Load(), Errors: s.errs.Load(), Elapsed: elapsed}
	r.PerSec = float64(r.Calls) / elapsed.Seconds()
	r.setLatencies(s.lat)
	if r.Calls == 0 {
		if e, ok := s.firstErr.Load().(error); ok {
			return r, fmt.Errorf("%s: no call succeeded: %v", name, e)
		}
	}
	return r, nil
}

// run is the state one [Run] shares between its clients and its clock:
// the calls counted while measuring, their latencies, and the current
// window's (when windows are asked for).
type run struct {
	measuring atomic.Bool
	ok, errs  atomic.Int64
	firstErr  atomic.Value

	mu  sync.Mutex
	lat []time.Duration // each client adds its own when it stops

	windows bool
	winMu   sync.Mutex
	winLat  []time.Duration
	winErrs int64
}

// calls is one client: it calls req until stop, paced to one call every
// period from next when period is set, and counts each call made while
// measuring.
func (s *run) calls(ctx context.Context, c *client.Client, req mcp.CallToolRequest, next time.Time, period time.Duration, stop <-chan struct{}) {
	local := make([]time.Duration, 0, 4096)
	for {
		select {
		case <-stop:
			s.mu.Lock()
			s.lat = append(s.lat, local...)
			s.mu.Unlock()
			return
		default:
		}
		if period > 0 {
			now := time.Now()
			if d := next.Sub(now); d > 0 {
				time.Sleep(d)
			} else if -d > period {
				next = now // fell behind: skip, do not burst
			}
			next = next.Add(period)
		}
		t0 := time.Now()
		res, err := c.CallTool(ctx, req)
		d := time.Since(t0)
		if !s.measuring.Load() {
			continue
		}
		if err != nil || res.IsError {
			s.errs.Add(1)
			if err == nil {
				err = fmt.Errorf("tool error: %v", res.Content)
			}
			s.firstErr.CompareAndSwap(nil, err)
			if s.windows {
				s.winMu.Lock()
				s.winErrs++
				s.winMu.Unlock()
			}
			continue
		}
		s.ok.Add(1)
		local = append(local, d)
		if s.windows {
			s.winMu.Lock()
			s.winLat = append(s.winLat, d)
			s.winMu.Unlock()
		}
	}
}

// measure is the measured phase: it counts calls for o.Duration (or until
// ctx ends), printing progress each second and handing o.OnWindow each
// window, and returns how long it measured.
func (s *run) measure(ctx context.Context, name string, o Options) time.Duration {
	s.measuring.Store(true)
	start := time.Now()
	tick := time.NewTicker(time.Second)
	end := time.After(o.Duration)
	var window <-chan time.Time
	if s.windows {
		s.winMu.Lock()
		s.winLat, s.winErrs = s.winLat[:0], 0 // the warm-up's calls are not the window's
		s.winMu.Unlock()
		wt := time.NewTicker(o.Window)
		defer wt.Stop()
		window = wt.C
	}
	winStart := start
loop:
	for {
		select {
		case now := <-window:
			s.winMu.Lock()
			l, e := s.winLat, s.winErrs
			s.winLat, s.winErrs = make([]time.Duration, 0, len(l)), 0
			s.winMu.Unlock()
			o.OnWindow(windowResult(name, l, e, now.Sub(winStart)))
			winStart = now
		case <-tick.C:
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "\r%s: %5.1fs  %d calls", name, time.Since(start).Seconds(), s.ok.Load())
			}
		case <-end:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	s.measuring.Store(false)
	if s.windows {
		// The last window ends with the phase (its ticker and the end fire
		// together, and the end may win).
		now := time.Now()
		s.winMu.Lock()
		l, e := s.winLat, s.winErrs
		s.winMu.Unlock()
		if d := now.Sub(winStart); d >= o.Window/2 && len(l)+int(e) > 0 {
			o.OnWindow(windowResult(name, l, e, d))
		}
	}
	return elapsed
}

// windowResult is one window's result: its calls, errors and latency
// percentiles over elapsed (without the latencies themselves).
func windowResult(name string, lat []time.Duration, errs int64, elapsed time.Duration) Result {
	w := Result{Name: name, Calls: int64(len(lat)), Errors: errs, Elapsed: elapsed}
	w.PerSec = float64(w.Calls) / elapsed.Seconds()
	w.setLatencies(lat)
	w.Latencies = nil
	return w
}

// connect starts o.Concurrency MCP sessions on hc; closeAll ends those
// started, also when connect fails.
func connect(ctx context.Context, o Options, hc *http.Client) (clients []*client.Client, closeAll func(), err error) {
	var copts []client.ClientOption
	if o.Protocol != "" {
		copts = append(copts, client.WithProtocolVersion(o.Protocol))
	}
	var started []*client.Client
	closeAll = func() {
		for i := len(started) - 1; i >= 0; i-- { // last first, as deferred closes ran
			started[i].Close()
		}
	}
	clients = make([]*client.Client, o.Concurrency)
	for i := range clients {
		t, err := transport.NewStreamableHTTP(o.URL, transport.WithHTTPBasicClient(hc))
		if err != nil {
			return nil, closeAll, err
		}
		c := client.NewClient(t, copts...)
		if err := c.Start(ctx); err != nil {
			return nil, closeAll, fmt.Errorf("%s: %v", o.URL, err)
		}
		started = append(started, c)
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
			return nil, closeAll, fmt.Errorf("%s: initialize: %v", o.URL, err)
		}
		clients[i] = c
	}
	return clients, closeAll, nil
}
