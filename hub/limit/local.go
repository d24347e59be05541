package limit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
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

// Local is an in-process [Limiter]: one token bucket per key (the
// arithmetic of golang.org/x/time/rate's Limiter, under the shard's lock
// alone), held in 64 shards chosen by a hash of the key, so calls for
// different keys rarely contend. Safe for concurrent use.
type Local struct {
	now    func() time.Time // nil: the wall clock
	base   time.Time        // the clock's readings are kept as durations since base
	sweep  time.Duration
	seed   maphash.Seed
	shards [localShards]localShard
}

type localShard struct {
	mu        sync.Mutex
	buckets   map[string]*localBucket
	lastSweep time.Duration // since Local.base
	_         [64]byte      // keep neighbouring shards' locks off one cache line
}

// localBucket is a token bucket: tokens as of last (since Local.base),
// refilled at rate up to burst. It computes what golang.org/x/time/rate's Limiter does (which
// Local used, with a lock of its own inside the shard's and the refill
// computed twice an Allow: to look, then to take).
type localBucket struct {
	rate   float64
	burst  int
	tokens float64
	last   time.Duration
}

// tokensAt is how many tokens the bucket holds at now (rate.Limiter's
// advance: a now before last counts as last).
func (b *localBucket) tokensAt(now time.Duration) float64 {
	last := min(b.last, now)
	tokens := b.tokens + (now-last).Seconds()*b.rate
	if burst := float64(b.burst); tokens > burst {
		tokens = burst
	}
	return tokens
}

var _ Limiter = (*Local)(nil)

// NewLocal returns an in-process limiter.
func NewLocal(opts *LocalOptions) *Local {
	l := &Local{sweep: time.Minute, seed: maphash.MakeSeed()}
	if opts != nil {
		l.now = opts.Now
		if opts.SweepEvery > 0 {
			l.sweep = opts.SweepEvery
		}
	}
	if l.now != nil {
		l.base = l.now()
	} else {
		l.base = time.Now()
	}
	for i := range l.shards {
		l.shards[i].buckets = make(map[string]*localBucket)
		l.shards[i].lastSweep = -l.sweep // the first call sweeps
	}
	return l
}

// elapsed reads the clock, as the time since base: on the wall clock,
// time.Since, which reads only the monotonic clock (time.Now reads it and
// the wall clock).
func (l *Local) elapsed() time.Duration {
	if l.now == nil {
		return time.Since(l.base)
	}
	return l.now().Sub(l.base)
}

// Allow implements [Limiter]. It never blocks on I/O; ctx is not consulted.
func (l *Local) Allow(_ context.Context, key string, r Rule, n int) (Decision, error) {
	if err := CheckRule(r, n); err != nil {
		return Decision{}, err
	}
	now := l.elapsed()
	s := &l.shards[maphash.String(l.seed, key)&(localShards-1)]

	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[key]
	switch {
	case b == nil:
		b = &localBucket{rate: r.Rate, burst: r.Burst, tokens: float64(r.Burst), last: now}
		s.buckets[key] = b
	case b.rate != r.Rate || b.burst != r.Burst:
		// The tokens so far at the old rule, then the new rule from now
		// (rate.Limiter's SetLimitAt and SetBurstAt).
		b.tokens, b.last = b.tokensAt(now), now
		b.rate, b.burst = r.Rate, r.Burst
	}

	// The shard lock makes "look, then take" atomic for this key.
	tokens := b.tokensAt(now)
	var d Decision
	if need := float64(n + r.Reserve); tokens >= need {
		b.tokens, b.last = tokens-float64(n), now
		d = Decision{Allowed: true, Remaining: wholeTokens(tokens - float64(n))}
	} else {
		d = Decision{RetryAfter: durationForTokens(need-tokens, r.Rate), Remaining: wholeTokens(tokens)}
	}
	if now-s.lastSweep >= l.sweep {
		s.sweepLocked(now)
	}
	return d, nil
}

func (s *localShard) sweepLocked(now time.Duration) {
	s.lastSweep = now
	for k, b := range s.buckets {
		if b.tokensAt(now) >= float64(b.burst) {
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
