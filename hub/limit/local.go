package limit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

const localShards = 64 // power of two

// LocalOptions configures [NewLocal]. A nil *LocalOptions means all defaults.
type LocalOptions struct {
	// Now returns the current time. Nil means [time.Now]. Tests inject a fake clock.
	Now func() time.Time
	// SweepEvery is how often each shard drops buckets that have refilled
	// completely (a full bucket is indistinguishable from a new one, so
	// dropping it changes no decision). Zero means one minute.
	SweepEvery time.Duration
}

// Local is an in-process [Limiter]: one golang.org/x/time/rate token bucket
// per key, held in 64 shards chosen by a hash of the key, so calls for
// different keys rarely contend. Safe for concurrent use.
type Local struct {
	now    func() time.Time
	sweep  time.Duration
	seed   maphash.Seed
	shards [localShards]localShard
}

type localShard struct {
	mu        sync.Mutex
	buckets   map[string]*localBucket
	lastSweep time.Time
	_         [64]byte // keep neighbouring shards' locks off one cache line
}

type localBucket struct {
	lim   *rate.Limiter
	rate  float64
	burst int
}

var _ Limiter = (*Local)(nil)

// NewLocal returns an in-process limiter.
func NewLocal(opts *LocalOptions) *Local {
	l := &Local{now: time.Now, sweep: time.Minute, seed: maphash.MakeSeed()}
	if opts != nil {
		if opts.Now != nil {
			l.now = opts.Now
		}
		if opts.SweepEvery > 0 {
			l.sweep = opts.SweepEvery
		}
	}
	for i := range l.shards {
		l.shards[i].buckets = make(map[string]*localBucket)
	}
	return l
}

// Allow implements [Limiter]. It never blocks on I/O; ctx is not consulted.
func (l *Local) Allow(_ context.Context, key string, r Rule, n int) (Decision, error) {
	if err := CheckRule(r, n); err != nil {
		return Decision{}, err
	}
	now := l.now()
	s := &l.shards[maphash.String(l.seed, key)&(localShards-1)]

	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[key]
	switch {
	case b == nil:
		b = &localBucket{lim: rate.NewLimiter(rate.Limit(r.Rate), r.Burst), rate: r.Rate, burst: r.Burst}
		s.buckets[key] = b
	case b.rate != r.Rate || b.burst != r.Burst:
		b.lim.SetLimitAt(now, rate.Limit(r.Rate))
		b.lim.SetBurstAt(now, r.Burst)
		b.rate, b.burst = r.Rate, r.Burst
	}

	// The shard lock makes "look, then take" atomic for this key.
	tokens := b.lim.TokensAt(now)
	var d Decision
	if need := float64(n + r.Reserve); tokens >= need && b.lim.AllowN(now, n) {
		d = Decision{Allowed: true, Remaining: wholeTokens(tokens - float64(n))}
	} else {
		d = Decision{RetryAfter: durationForTokens(need-tokens, r.Rate), Remaining: wholeTokens(tokens)}
	}
	if now.Sub(s.lastSweep) >= l.sweep {
		s.sweepLocked(now)
	}
	return d, nil
}

func (s *localShard) sweepLocked(now time.Time) {
	s.lastSweep = now
	for k, b := range s.buckets {
		if b.lim.TokensAt(now) >= float64(b.burst) {
			delete(s.buckets, k)
		}
	}
}

// Len returns the number of buckets held (for metrics and tests).
func (l *Local) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}
