package drill

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/pgledger"
)

// StoreFaultsOptions configure [StoreFaults]. Binary and Vendors are
// required; zero fields of the others mean the defaults.
type StoreFaultsOptions struct {
	// Binary is the toolhub executable the two instances run.
	Binary string
	// Vendors serves weather-a, the vendor of the traffic.
	Vendors VendorServer
	// Env is added to the instances' environment.
	Env []string
	// Rate is the offered calls/s over both instances; zero means 40.
	Rate float64
	// Hold is how long Redis stays hung and PostgreSQL stopped, and Redis
	// gone around the restart; zero means 8s.
	Hold time.Duration
	// Settle is the healthy traffic before the first fault and after
	// each one (it counts in the fault's phase); zero means 2s.
	Settle time.Duration
	// Logs, if set, receives the instances' log lines, prefixed.
	Logs io.Writer
}

// PhaseCounts are one instance's calls in one phase: Sent to it (a call
// the client moved to the other instance counts on both), Answered with
// a result, Errors (refused, reset, or an HTTP error).
type PhaseCounts struct {
	Sent, Answered, Errors int64
}

// FaultPhase is one phase of [StoreFaults]: the fault, then Settle of
// healthy traffic. Calls, Answered and Failed are the client's (a call
// moved to the other instance counts once).
type FaultPhase struct {
	Name                    string
	Instances               []PhaseCounts
	Calls, Answered, Failed int64
	// FirstError is the first error an instance answered in the phase
	// (the call then moved to the other one).
	FirstError string
}

// StoreFaultsReport is what [StoreFaults] measured.
type StoreFaultsReport struct {
	Rate   float64
	Hold   time.Duration
	Phases []FaultPhase
	// KillRestart: SIGKILL → the killed instance, restarted on its data
	// folder, answering; AwayRestart: the restart with Redis gone → the
	// instance answering; Rejoined: Redis back → both instances with
	// both stores joined (/readyz).
	KillRestart, AwayRestart, Rejoined time.Duration
	// The client's totals over every phase; FirstError is the first
	// call that no instance answered.
	Calls, Answered, Failed int64
	FirstError              string
	// InFlightKilled: calls on the killed instance when it died; the
	// client moved them to the other instance.
	InFlightKilled int64
	// The ledger against the vendor and the clients. LedgerCalls are the
	// call events; VendorCalls the calls weather-a received;
	// LedgerAttempts its attempt events, UnknownAttempts of them recovered
	// from the killed instance's write-ahead log (it died before the
	// answer, so the client moved the call: such a call reached the
	// vendor twice and is answered once).
	LedgerCalls, VendorCalls, LedgerAttempts, UnknownAttempts int64
	// EventsLost: answered calls with no call event (must be 0);
	// EventsExtra: call events for calls no client saw answered, beyond
	// those in flight at the kill (must be 0). AttemptsLost: vendor calls
	// with no attempt event; AttemptsExtra: attempt events beyond the
	// vendor's calls (both must be 0).
	EventsLost, EventsExtra, AttemptsLost, AttemptsExtra int64
}

// The phases of [StoreFaults], in order.
const (
	phaseSteady    = "steady"
	phaseRedisHung = "redis hung (SIGSTOP)"
	phaseKill      = "instance 1 killed (SIGKILL), restarted"
	phasePGStop    = "postgres stopped"
	phaseAway      = "instance 0 restarted, redis gone"
)

func (r StoreFaultsReport) String() string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	var b strings.Builder
	fmt.Fprintf(&b, "two instances on one Redis and one PostgreSQL (private to the drill) at %.0f calls/s; faults held %v\n", r.Rate, r.Hold)
	fmt.Fprintf(&b, "%-40s %8s %8s %8s  %-22s %-22s\n", "phase", "calls", "answered", "failed", "instance 0 sent/ok/err", "instance 1 sent/ok/err")
	for _, p := range r.Phases {
		fmt.Fprintf(&b, "%-40s %8d %8d %8d ", p.Name, p.Calls, p.Answered, p.Failed)
		for _, c := range p.Instances {
			fmt.Fprintf(&b, " %-22s", fmt.Sprintf("%d/%d/%d", c.Sent, c.Answered, c.Errors))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%-40s %8d %8d %8d\n", "all", r.Calls, r.Answered, r.Failed)
	for _, p := range r.Phases {
		if p.FirstError != "" {
			fmt.Fprintf(&b, "%s: first error answered (the call moved): %s\n", p.Name, p.FirstError)
		}
	}
	fmt.Fprintf(&b, "killed instance answering %v after SIGKILL; instance restarted without Redis answering %v after start; both stores joined by both %v after Redis returned\n",
		ms(r.KillRestart), ms(r.AwayRestart), ms(r.Rejoined))
	fmt.Fprintf(&b, "ledger %d calls = clients %d answered (lost %d, extra %d); vendor %d calls = ledger %d attempts (lost %d, extra %d; %d unknown: %d calls in flight on the killed instance, moved)",
		r.LedgerCalls, r.Answered, r.EventsLost, r.EventsExtra, r.VendorCalls, r.LedgerAttempts, r.AttemptsLost, r.AttemptsExtra, r.UnknownAttempts, r.InFlightKilled)
	if r.FirstError != "" {
		fmt.Fprintf(&b, "\nfirst error: %s", r.FirstError)
	}
	return b.String()
}

// Ok reports whether every call was answered, each instance answered in
// every phase, and ledger, vendor and clients agree.
func (r StoreFaultsReport) Ok() bool {
	for _, p := range r.Phases {
		if p.Failed != 0 || p.Answered == 0 {
			return false
		}
		for _, c := range p.Instances {
			if c.Answered == 0 {
				return false
			}
		}
	}
	return r.Failed == 0 && len(r.Phases) > 0 && r.EventsLost == 0 && r.EventsExtra == 0 && r.AttemptsLost == 0 && r.AttemptsExtra == 0
}

// faultsConfig is each instance's toolhub.yaml: a fixed port (a restart
// comes back where its clients call), the drill's Redis and PostgreSQL,
// weather-a with no retries (each call is one vendor attempt).
const faultsConfig = `addr: %[1]s
log_level: info
redis: redis://%[2]s/0
redis_prefix: "drill:"
postgres: %[3]q
postgres_schema: toolhub_drill
instances: 2
outbound: {allow: [%[4]q]}
governance:
  retry: {max: 0}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "http://%[4]s/weather-a/mcp"}
    probe: {disabled: true}
`

// StoreFaults runs two `toolhub serve` instances on one Redis and one
// PostgreSQL of its own (started in a temporary folder on free ports, so
// that they can be hung and stopped), spreads steady weather calls over
// them from a client that moves a failed call to the other instance (as a
// load balancer would), and goes through the phases: Redis hung with
// SIGSTOP for Hold; instance 1 killed with SIGKILL and restarted on its
// data folder; PostgreSQL stopped for Hold; Redis killed, instance 0
// restarted while it is gone, Redis back after Hold. It reports the calls
// of each phase on each instance, and the ledger against the vendor and
// the clients.
func StoreFaults(ctx context.Context, opts *StoreFaultsOptions) (StoreFaultsReport, error) {
	o, err := storeFaultsOptions(opts)
	if err != nil {
		return StoreFaultsReport{}, err
	}
	rep := StoreFaultsReport{Rate: o.Rate, Hold: o.Hold}
	l, err := startFaultsLab(ctx, &o)
	defer l.close()
	if err != nil {
		return rep, err
	}
	c := &faultClient{urls: l.urls}
	c.begin(phaseSteady, len(l.hubs))
	tr := startTraffic(ctx, o.Rate, c.call)
	defer tr.stop()
	sleep(ctx, o.Settle)

	for _, step := range []func(context.Context, *faultClient, *StoreFaultsReport) error{
		l.redisHung, l.killInstance, l.stopPostgres, l.redisAway,
	} {
		if err := step(ctx, c, &rep); err != nil {
			return rep, err
		}
		sleep(ctx, o.Settle)
	}
	tr.stop()

	// Stop both gracefully: their meters flush to the ledger.
	for _, h := range l.hubs {
		if err := stopHub(h); err != nil {
			return rep, err
		}
	}
	if err := tr.err(); err != nil {
		rep.FirstError = err.Error()
	}
	rep.Phases, rep.InFlightKilled = c.report()
	for _, p := range rep.Phases {
		rep.Calls += p.Calls
		rep.Answered += p.Answered
		rep.Failed += p.Failed
	}
	rep.VendorCalls = l.weather.Counters().CallsTotal
	return rep, c.countLedger(ctx, l.pg.dsn("test"), &rep)
}

// storeFaultsOptions are opts with their defaults, or why they cannot run.
func storeFaultsOptions(opts *StoreFaultsOptions) (StoreFaultsOptions, error) {
	var o StoreFaultsOptions
	if opts != nil {
		o = *opts
	}
	if err := needProcesses("StoreFaultsOptions", o.Binary, o.Vendors); err != nil {
		return o, err
	}
	if o.Rate <= 0 {
		o.Rate = 40
	}
	if o.Hold <= 0 {
		o.Hold = 8 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Second
	}
	return o, nil
}

// faultsLab is what [StoreFaults] runs on: its private Redis and
// PostgreSQL, weather-a, and the two instances with their configs.
type faultsLab struct {
	o       *StoreFaultsOptions
	dir     string
	rs, pg  *privateServer
	served  *ServedVendors
	weather Vendor
	cfgs    []string
	urls    []string
	hubs    []*Process
}

// startFaultsLab starts the stores, the vendor and the instances, in a
// temporary folder. Close the lab even on an error: it stops what started.
func startFaultsLab(ctx context.Context, o *StoreFaultsOptions) (*faultsLab, error) {
	l := &faultsLab{o: o}
	dir, err := os.MkdirTemp("", "toolhub-drill-faults-")
	if err != nil {
		return l, err
	}
	l.dir = dir
	for _, d := range []string{"redis", "postgres"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return l, err
		}
	}
	if l.rs, err = startPrivateRedis(ctx, filepath.Join(dir, "redis")); err != nil {
		return l, err
	}
	if l.pg, err = startPrivatePostgres(ctx, filepath.Join(dir, "postgres")); err != nil {
		return l, err
	}
	if l.served, err = o.Vendors.Serve(map[string]*VendorOptions{vendorWeatherA: {Knobs: Knobs{Latency: 10 * time.Millisecond}}}); err != nil {
		return l, err
	}
	l.weather = l.served.Vendors[vendorWeatherA]

	const n = 2
	l.cfgs, l.urls, l.hubs = make([]string, n), make([]string, n), make([]*Process, n)
	for i := range n {
		port, err := freePort()
		if err != nil {
			return l, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l.urls[i] = "http://" + addr
		l.cfgs[i] = filepath.Join(dir, fmt.Sprintf("toolhub-%d.yaml", i))
		text := fmt.Sprintf(faultsConfig, addr, l.rs.addr, l.pg.dsn("test"), l.served.Addr)
		if err := os.WriteFile(l.cfgs[i], []byte(text), 0o600); err != nil {
			return l, err
		}
	}
	// The first alone: it creates the schema.
	for i := range n {
		if l.hubs[i], err = l.start(ctx, i); err != nil {
			return l, err
		}
	}
	return l, nil
}

// close kills the instances and stops the vendor and the stores.
func (l *faultsLab) close() {
	for _, h := range l.hubs {
		if h != nil {
			h.Kill()
		}
	}
	if l.served != nil {
		l.served.Close()
	}
	if l.pg != nil {
		_ = l.pg.stop() // a clean shutdown releases its shared memory
		l.pg.kill()
	}
	if l.rs != nil {
		l.rs.kill()
	}
	if l.dir != "" {
		os.RemoveAll(l.dir)
	}
}

// start starts instance i on its config and data folder, and waits until
// it listens and weather-a is ready on it.
func (l *faultsLab) start(ctx context.Context, i int) (*Process, error) {
	return startHub(ctx, l.o.Binary, l.o.Env, l.o.Logs, i, l.cfgs[i], filepath.Join(l.dir, fmt.Sprintf("data-%d", i)), vendorWeatherA)
}

// redisHung is the phase of Redis hung (SIGSTOP) for Hold: every
// connection to it stalls.
func (l *faultsLab) redisHung(ctx context.Context, c *faultClient, _ *StoreFaultsReport) error {
	c.begin(phaseRedisHung, len(l.hubs))
	if err := l.rs.hang(); err != nil {
		return err
	}
	sleep(ctx, l.o.Hold)
	return l.rs.resume()
}

// killInstance is the phase of instance 1 killed (SIGKILL) mid-load and
// restarted on its data folder.
func (l *faultsLab) killInstance(ctx context.Context, c *faultClient, rep *StoreFaultsReport) error {
	c.begin(phaseKill, len(l.hubs))
	killed := time.Now()
	c.killed(1, killed)
	l.hubs[1].Kill()
	var err error
	if l.hubs[1], err = l.start(ctx, 1); err != nil {
		return fmt.Errorf("restarting the killed instance: %w", err)
	}
	rep.KillRestart = time.Since(killed)
	c.killed(-1, time.Time{})
	return nil
}

// stopPostgres is the phase of PostgreSQL stopped (a fast shutdown) for
// Hold and started again.
func (l *faultsLab) stopPostgres(ctx context.Context, c *faultClient, _ *StoreFaultsReport) error {
	c.begin(phasePGStop, len(l.hubs))
	if err := l.pg.stop(); err != nil {
		return err
	}
	sleep(ctx, l.o.Hold)
	return l.pg.start(ctx)
}

// redisAway is the phase of Redis killed and instance 0 restarted (a
// deploy) while it is gone; Redis returns after Hold, and the phase ends
// when both instances have joined both stores again.
func (l *faultsLab) redisAway(ctx context.Context, c *faultClient, rep *StoreFaultsReport) error {
	c.begin(phaseAway, len(l.hubs))
	gone := time.Now()
	l.rs.kill()
	sleep(ctx, l.o.Hold/4)
	if err := stopHub(l.hubs[0]); err != nil {
		return err
	}
	restart := time.Now()
	var err error
	if l.hubs[0], err = l.start(ctx, 0); err != nil {
		return fmt.Errorf("restarting an instance while Redis is gone: %w", err)
	}
	rep.AwayRestart = time.Since(restart)
	sleep(ctx, time.Until(gone.Add(l.o.Hold)))
	if err := l.rs.start(ctx); err != nil {
		return err
	}
	back := time.Now()
	joined, err := waitFor(ctx, 60*time.Second, func() bool { return storesJoined(ctx, l.hubs) })
	if err != nil {
		return fmt.Errorf("the instances did not join Redis and PostgreSQL within 60s of Redis returning: %w", err)
	}
	rep.Rejoined = joined.Sub(back)
	return nil
}

// freePort asks the kernel for a loopback port nobody listens on.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// storesJoined reports whether every instance's /readyz shows every
// store up.
func storesJoined(ctx context.Context, hubs []*Process) bool {
	for _, h := range hubs {
		var r struct {
			Stores []struct {
				Store string `json:"store"`
				Up    bool   `json:"up"`
			} `json:"stores"`
		}
		if getJSON(ctx, h.URL()+"/readyz", &r) != nil || len(r.Stores) == 0 {
			return false
		}
		for _, s := range r.Stores {
			if !s.Up {
				return false
			}
		}
	}
	return true
}

// faultClient spreads calls over the instances round robin and moves a
// call an instance did not answer to the next one, counting per phase.
type faultClient struct {
	urls []string
	next atomic.Uint64

	mu       sync.Mutex
	phases   []FaultPhase
	answered map[string]bool // call ids
	victim   int             // -1: no instance being killed
	killedAt time.Time
	inFlight int64
}

func (c *faultClient) begin(name string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phases == nil {
		c.victim = -1
	}
	c.phases = append(c.phases, FaultPhase{Name: name, Instances: make([]PhaseCounts, n)})
}

// killed marks instance i as killed at t (i < 0: restarted).
func (c *faultClient) killed(i int, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.victim, c.killedAt = i, t
}

func (c *faultClient) call(ctx context.Context) error {
	n := c.next.Add(1)
	body := map[string]any{"arguments": map[string]any{"city": cities[n%uint64(len(cities))]}}
	c.mu.Lock()
	p := len(c.phases) - 1
	c.phases[p].Calls++
	c.mu.Unlock()
	var last error
	for k := range len(c.urls) {
		i := int((n + uint64(k)) % uint64(len(c.urls)))
		sent := time.Now()
		st, res, err := postJSON(ctx, c.urls[i]+"/v1/tools/weather-a__current_weather/call", body)
		c.mu.Lock()
		pc := &c.phases[p].Instances[i]
		pc.Sent++
		if err != nil || st != http.StatusOK {
			pc.Errors++
			if err != nil && i == c.victim && sent.Before(c.killedAt) {
				c.inFlight++
			}
			c.mu.Unlock()
			if err == nil {
				err = fmt.Errorf("HTTP %d: %v", st, res)
			}
			last = fmt.Errorf("instance %d: %w", i, err)
			c.mu.Lock()
			if c.phases[p].FirstError == "" {
				c.phases[p].FirstError = last.Error()
			}
			c.mu.Unlock()
			continue
		}
		pc.Answered++
		c.phases[p].Answered++
		pr, _ := res["provenance"].(map[string]any)
		id, _ := pr["call_id"].(string)
		if c.answered == nil {
			c.answered = map[string]bool{}
		}
		c.answered[id] = true
		c.mu.Unlock()
		return nil
	}
	c.mu.Lock()
	c.phases[p].Failed++
	c.mu.Unlock()
	return fmt.Errorf("no instance answered: %w", last)
}

func (c *faultClient) report() ([]FaultPhase, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]FaultPhase, len(c.phases))
	for i, p := range c.phases {
		p.Instances = append([]PhaseCounts(nil), p.Instances...)
		out[i] = p
	}
	return out, c.inFlight
}

// countLedger compares the ledger with the vendor and the calls the
// client saw answered.
func (c *faultClient) countLedger(ctx context.Context, dsn string, rep *StoreFaultsReport) error {
	l, err := pgledger.Open(ctx, dsn, &pgledger.Options{Schema: "toolhub_drill", ReadOnly: true})
	if err != nil {
		return err
	}
	defer l.Close()
	calls := map[string]bool{}
	var known int64
	err = l.Query(ctx, billing.Filter{}, func(e billing.Event) error {
		if e.Vendor != vendorWeatherA {
			return nil
		}
		switch e.Kind {
		case billing.KindCall:
			calls[e.CallID] = true
		case billing.KindAttempt:
			rep.LedgerAttempts++
			if e.Outcome == billing.OutcomeUnknown {
				rep.UnknownAttempts++
			} else {
				known++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	rep.LedgerCalls = int64(len(calls))
	rep.AttemptsLost = max(rep.VendorCalls-rep.LedgerAttempts, 0)
	rep.AttemptsExtra = max(known-rep.VendorCalls, 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	lost, unanswered := compareCalls(c.answered, calls)
	rep.EventsLost += lost
	rep.EventsExtra = max(unanswered-c.inFlight, 0)
	return nil
}
