// Package redisvolume keeps the monthly volumes of tiered prices in Redis,
// so that every hub on one Redis and ledger counts the same Nth call of the
// month and a tier boundary falls at exactly the configured call number.
//
//	vol := redisvolume.New(rdb, &redisvolume.Options{Prefix: "toolhub:volume:"})
//	pricer := billing.NewPricer(book, &billing.PricerOptions{Volumes: vol})
//	pricer.Seed(ctx, ledger, time.Now()) // the ledger's counts, for keys Redis does not have
//
// One key per tenant (or vendor side), vendor, tool and month, counted with
// INCRBY in a Lua script that first seeds an absent key with the count this
// hub knows (the ledger's at start, the last shared count later), so a
// racing seed never double counts and a flushed Redis resumes near the
// truth. Keys expire [Options].Keep after their month ends.
//
// When Redis cannot be reached the counter goes on locally from the last
// shared count, logs one warning (not one per call), probes Redis in the
// background, and when it answers again adds the calls counted meanwhile
// to the shared count.
package redisvolume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/billing"
)

// Options configure [New]. A nil *Options means the defaults.
type Options struct {
	// Prefix is prepended to every key; "" means "toolhub:volume:".
	Prefix string
	// Keep is how long a month's counters live after the month ends;
	// zero means 28 days.
	Keep time.Duration
	// Timeout bounds one Redis round trip; zero means 500ms.
	Timeout time.Duration
	// ProbeInterval is how often, while Redis is unreachable, a background
	// probe (PING) tries it; callers never wait on a probe. Zero means 1s.
	ProbeInterval time.Duration
	// Logger; nil means slog.Default(). Now is the clock; nil means time.Now.
	Logger *slog.Logger
	Now    func() time.Time
}

// Counter is a Redis [billing.VolumeCounter] with a local fallback.
type Counter struct {
	rdb      redis.UniversalClient
	prefix   string
	keep     time.Duration
	timeout  time.Duration
	interval time.Duration
	log      *slog.Logger
	now      func() time.Time

	mu     sync.Mutex
	local  map[billing.VolumeKey]*count
	latest int // latest month counted: older months are swept from local

	degraded  atomic.Bool
	nextProbe atomic.Int64   // unix nanoseconds
	probes    sync.WaitGroup // in-flight probe; waited for by tests
}

// count is what this hub knows of one key.
type count struct {
	shared  int64 // the last count Redis returned (or the ledger's seed)
	pending int64 // calls counted here while Redis was unreachable, not yet added to it
}

var _ billing.VolumeCounter = (*Counter)(nil)

// New returns a counter on rdb.
func New(rdb redis.UniversalClient, opts *Options) *Counter {
	c := &Counter{rdb: rdb, prefix: "toolhub:volume:", keep: 28 * 24 * time.Hour, timeout: 500 * time.Millisecond,
		interval: time.Second, now: time.Now, local: map[billing.VolumeKey]*count{}}
	if opts != nil {
		if opts.Prefix != "" {
			c.prefix = opts.Prefix
		}
		if opts.Keep > 0 {
			c.keep = opts.Keep
		}
		if opts.Timeout > 0 {
			c.timeout = opts.Timeout
		}
		if opts.ProbeInterval > 0 {
			c.interval = opts.ProbeInterval
		}
		c.log = opts.Logger
		if opts.Now != nil {
			c.now = opts.Now
		}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c
}

// Degraded reports whether Redis is currently considered unreachable.
func (c *Counter) Degraded() bool { return c.degraded.Load() }

// next: KEYS[1] counter; ARGV[1] seed for an absent key, ARGV[2]
// increment, ARGV[3] expiry (unix seconds). Returns the new count.
var next = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	redis.call('SET', KEYS[1], ARGV[1])
	redis.call('EXPIREAT', KEYS[1], ARGV[3])
end
return redis.call('INCRBY', KEYS[1], ARGV[2])
`)

func (c *Counter) key(k billing.VolumeKey) string { return c.prefix + k.String() }

func (c *Counter) expireAt(k billing.VolumeKey) int64 { return k.MonthEnd().Add(c.keep).Unix() }

// get returns the local count of k; c.mu is held.
func (c *Counter) get(k billing.VolumeKey) *count {
	if k.Month > c.latest {
		c.latest = k.Month
		billing.SweepMonths(c.local, k.Month)
	}
	n := c.local[k]
	if n == nil {
		n = &count{}
		c.local[k] = n
	}
	return n
}

// Next implements [billing.VolumeCounter]. It does not fail: while Redis
// is unreachable it counts locally.
func (c *Counter) Next(ctx context.Context, k billing.VolumeKey) (int64, error) {
	if !c.degraded.Load() {
		c.mu.Lock()
		n := c.get(k)
		seed, inc := n.shared, n.pending+1
		n.pending = 0
		c.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
		got, err := next.Run(rctx, c.rdb, []string{c.key(k)}, seed, inc, c.expireAt(k)).Int64()
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		n = c.get(k)
		if err == nil {
			n.shared = max(n.shared, got)
			return got, nil
		}
		n.pending += inc // not added to Redis: keep them for when it is back
		if c.degraded.CompareAndSwap(false, true) {
			c.nextProbe.Store(c.now().Add(c.interval).UnixNano())
			c.log.Warn("billing: shared tier volumes unreachable (redis): counting locally until it answers", "err", err)
		}
		return n.shared + n.pending, nil
	}
	now := c.now().UnixNano()
	if t := c.nextProbe.Load(); now >= t && c.nextProbe.CompareAndSwap(t, now+int64(c.interval)) {
		c.probes.Add(1)
		go c.probe()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.get(k)
	n.pending++
	return n.shared + n.pending, nil
}

// probe pings Redis once, off the callers' path, and ends the fallback if
// it answers: the next Next of each key adds its pending calls.
func (c *Counter) probe() {
	defer c.probes.Done()
	ctx, cancel := context.WithTimeout(context.Background(), min(c.interval, c.timeout))
	defer cancel()
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return
	}
	if c.degraded.CompareAndSwap(true, false) {
		c.log.Info("billing: shared tier volumes reachable again (redis)")
	}
}

// Seed implements [billing.VolumeCounter]: each count is kept locally (it
// seeds an absent key at its first Next) and set in Redis if the key is
// absent there (SET NX), so the hub that starts first seeds and the others
// keep the shared count.
func (c *Counter) Seed(ctx context.Context, counts map[billing.VolumeKey]int64) error {
	c.mu.Lock()
	for k, v := range counts {
		if n := c.get(k); n.shared == 0 {
			n.shared = v
		}
	}
	c.mu.Unlock()
	if len(counts) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout+time.Duration(len(counts))*time.Millisecond)
	defer cancel()
	_, err := c.rdb.Pipelined(rctx, func(p redis.Pipeliner) error {
		for k, v := range counts {
			p.SetArgs(rctx, c.key(k), v, redis.SetArgs{Mode: "NX", ExpireAt: time.Unix(c.expireAt(k), 0)})
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisvolume: seed %d counters: %w (they seed at their first call instead)", len(counts), err)
	}
	return nil
}
