package drill

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/limit"
)

// LimiterOptions configure [SharedLimit]. Vendors is required; zero
// fields of the others mean the defaults.
type LimiterOptions struct {
	// Vendors serves the hubs' vendor (weather-a); toolhub ships none:
	// callers pass the example vendors (examples/drillvendors).
	Vendors VendorServer

	Hubs    int           // hubs sharing the limit; zero means 3
	Rate    float64       // the vendor's limit, calls/s; zero means 100
	Burst   int           // its burst; zero means 50
	Span    time.Duration // how long the hubs push; zero means 3s
	Workers int           // callers per hub; zero means 4
	Redis   string        // host:port; "" means [DefaultRedis]
}

// LimiterReport is what [SharedLimit] measured.
type LimiterReport struct {
	Hubs     int
	Rate     float64
	Burst    int
	Span     time.Duration // first to last admitted call, by send time
	Admitted int64
	Refused  int64
	Expected float64 // burst (less the retry headroom) + rate·span
	// Fallbacks counts the times a hub found Redis too slow (100 ms) or
	// gone and fell back to local limits: each admits a local burst more,
	// so the figure then measures the machine, not the limit.
	Fallbacks int
}

// ErrorPercent is how far admitted is from expected, in percent.
func (r LimiterReport) ErrorPercent() float64 {
	return 100 * (float64(r.Admitted) - r.Expected) / r.Expected
}

// Saturated reports whether the callers kept the limit busy: at least as
// many calls refused as admitted. Otherwise fewer admitted calls than
// expected measure the callers, not the limit.
func (r LimiterReport) Saturated() bool { return r.Refused >= r.Admitted }

// Valid reports whether the figure measures the limit: saturated, and
// never fallen back to local limits.
func (r LimiterReport) Valid() bool { return r.Saturated() && r.Fallbacks == 0 }

func (r LimiterReport) String() string {
	s := fmt.Sprintf("limiter accuracy across instances: %d hubs on one Redis limit of %.0f/s (burst %d) for %.2fs: admitted %d, expected %.1f (%+.2f%% error), refused %d",
		r.Hubs, r.Rate, r.Burst, r.Span.Seconds(), r.Admitted, r.Expected, r.ErrorPercent(), r.Refused)
	if r.Fallbacks > 0 {
		s += fmt.Sprintf("; INVALID: Redis answered too slowly %d time(s) and hubs fell back to local limits (a busy machine)", r.Fallbacks)
	}
	if !r.Saturated() {
		s += "; INVALID: the callers could not keep the limit busy (fewer refused than admitted: a busy machine)"
	}
	return s
}

// SharedLimit runs several hubs in this process on one Redis limit, has
// each push calls as fast as the limit lets it (waiting as told when
// refused), and counts the admitted calls against what the limit allows:
// its burst at once, then one call per 1/rate. Calls are timed by when
// they were sent: the limiter decides moments after the send and before
// the vendor answers, so a busy machine's slow answers skew nothing.
func SharedLimit(ctx context.Context, opts *LimiterOptions) (LimiterReport, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return LimiterReport{}, err
	}
	rep := LimiterReport{Hubs: o.Hubs, Rate: o.Rate, Burst: o.Burst}
	id := uniqueID("w")
	prefix := "drill-" + id + ":"
	defer dropRedisPrefix(o.Redis, prefix)
	cfg := fmt.Sprintf(`
redis: redis://%s/0
redis_prefix: %q
instances: %d
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - id: %s
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    limits: {rps: %v, burst: %d}
    probe: {disabled: true}
governance: {retry: {max: 0}}
`, o.Redis, prefix, o.Hubs, id, o.Rate, o.Burst)
	var labs []*Lab
	defer func() {
		for _, l := range labs {
			l.Close()
		}
	}()
	w := newLogWatch(nil)
	for range o.Hubs {
		l, err := NewLab(ctx, LabOptions{Config: cfg, Logger: slog.New(w), Vendors: o.Vendors})
		if err != nil {
			return rep, err
		}
		labs = append(labs, l)
	}
	var c limitCounts
	var wg sync.WaitGroup
	end := time.Now().Add(o.Span)
	for _, l := range labs {
		for range o.Workers {
			wg.Go(func() { c.saturate(ctx, l.App.Gateway, id+"__current_weather", end) })
		}
	}
	wg.Wait()
	if e := c.failed.Load(); e != nil {
		return rep, fmt.Errorf("a call failed: %w", *e)
	}
	// The limit admits the burst at once (less the headroom that first
	// attempts leave for retries), then one call per 1/rate: over the span
	// from the first to the last admitted call, burst + rate·span.
	rep.Span = time.Duration(c.last.Load() - c.first.Load())
	reserve := limit.Priority{}.Reserve(limit.Rule{Rate: o.Rate, Burst: o.Burst}, 1, limit.Class{})
	rep.Expected = o.Rate*rep.Span.Seconds() + float64(o.Burst-reserve)
	rep.Admitted, rep.Refused = c.admitted.Load(), c.refused.Load()
	rep.Fallbacks = w.times(logLimiterDown)
	return rep, nil
}

func (opts *LimiterOptions) withDefaults() (LimiterOptions, error) {
	var o LimiterOptions
	if opts != nil {
		o = *opts
	}
	if err := needVendors("LimiterOptions", o.Vendors); err != nil {
		return o, err
	}
	if o.Hubs <= 0 {
		o.Hubs = 3
	}
	if o.Rate <= 0 {
		o.Rate = 100
	}
	if o.Burst <= 0 {
		o.Burst = 50
	}
	if o.Span <= 0 {
		o.Span = 3 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Redis == "" {
		o.Redis = DefaultRedis
	}
	return o, nil
}

// limitCounts are the calls the limit admitted and refused, when the
// first and last admitted were sent, and the first other failure.
type limitCounts struct {
	admitted, refused, first, last atomic.Int64
	failed                         atomic.Pointer[error]
}

// saturate calls tool through gw until end, keeping the limit saturated.
func (c *limitCounts) saturate(ctx context.Context, gw *hub.Gateway, tool string, end time.Time) {
	for time.Now().Before(end) && ctx.Err() == nil {
		sent := time.Now().UnixNano()
		_, err := gw.Call(ctx, &hub.Call{Tenant: "default", Name: tool, Arguments: map[string]any{"city": "Oslo"}})
		switch hub.CodeOf(err) {
		case "":
			c.admitted.Add(1)
			for f := c.first.Load(); (f == 0 || sent < f) && !c.first.CompareAndSwap(f, sent); f = c.first.Load() {
			}
			for l := c.last.Load(); sent > l && !c.last.CompareAndSwap(l, sent); l = c.last.Load() {
			}
		case hub.CodeRateLimited:
			c.refused.Add(1)
			// Wait as told, a little at most: the limit stays
			// saturated without burning the cores it runs on.
			time.Sleep(min(max(hub.AsError(err).RetryAfter, time.Millisecond), 10*time.Millisecond))
		default:
			c.failed.CompareAndSwap(nil, &err)
			return
		}
	}
}
