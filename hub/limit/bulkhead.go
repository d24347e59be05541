package limit

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Bulkhead bounds the number of calls in flight. Safe for concurrent use.
type Bulkhead struct {
	slots   chan struct{}
	waiting atomic.Int64
}

// NewBulkhead returns a bulkhead admitting at most max calls at once.
// It panics if max < 1.
func NewBulkhead(max int) *Bulkhead {
	if max < 1 {
		panic(fmt.Sprintf("limit: NewBulkhead(%d): max must be at least 1", max))
	}
	return &Bulkhead{slots: make(chan struct{}, max)}
}

// Acquire takes a slot, waiting at most maxWait for one to free up. It
// returns [ErrOverloaded] when the wait runs out, or ctx's error when ctx is
// done first. On success the caller must call release once the call is
// over; release is idempotent.
func (b *Bulkhead) Acquire(ctx context.Context, maxWait time.Duration) (release func(), err error) {
	if err := b.Enter(ctx, maxWait); err != nil {
		return nil, err
	}
	return b.releaser(), nil
}

// Enter takes a slot as [Bulkhead.Acquire] does, without making a release
// function: on success the caller must call [Bulkhead.Leave] exactly once
// when the call is over. It is for hot paths that cannot spare the
// allocation.
func (b *Bulkhead) Enter(ctx context.Context, maxWait time.Duration) error {
	select {
	case b.slots <- struct{}{}:
		return nil
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if maxWait <= 0 {
		return ErrOverloaded
	}
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	t := time.NewTimer(maxWait)
	defer t.Stop()
	select {
	case b.slots <- struct{}{}:
		return nil
	case <-t.C:
		return ErrOverloaded
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Leave frees the slot of one successful [Bulkhead.Enter].
func (b *Bulkhead) Leave() { <-b.slots }

func (b *Bulkhead) releaser() func() {
	var once sync.Once
	return func() { once.Do(func() { <-b.slots }) }
}

// InFlight returns the number of slots held.
func (b *Bulkhead) InFlight() int { return len(b.slots) }

// Waiting returns the number of callers waiting in Acquire.
func (b *Bulkhead) Waiting() int { return int(b.waiting.Load()) }

// Max returns the number of slots.
func (b *Bulkhead) Max() int { return cap(b.slots) }

// Bulkheads holds one [Bulkhead] per key, created on first use and dropped
// when its last holder or waiter is gone, so idle keys cost nothing.
// Safe for concurrent use; the zero value is ready.
type Bulkheads struct {
	once   sync.Once
	seed   maphash.Seed
	shards [16]bulkheadShard
}

type bulkheadShard struct {
	mu sync.Mutex
	m  map[string]*bulkheadEntry
}

type bulkheadEntry struct {
	b    *Bulkhead
	refs int // holders + waiters
}

// Acquire takes a slot of key's bulkhead, which admits max calls at once
// (see [Bulkhead.Acquire]). When max changes, calls from then on use a new
// bulkhead of the new size; calls already holding slots of the old one
// finish there, so for a moment both may be in flight.
func (s *Bulkheads) Acquire(ctx context.Context, key string, max int, maxWait time.Duration) (release func(), err error) {
	if max < 1 {
		return nil, fmt.Errorf("%w: bulkhead %q: max %d: want at least 1", ErrInvalid, key, max)
	}
	sh := s.shard(key)
	sh.mu.Lock()
	e := sh.m[key]
	if e == nil || e.b.Max() != max {
		e = &bulkheadEntry{b: NewBulkhead(max)}
		sh.m[key] = e
	}
	e.refs++
	sh.mu.Unlock()

	unref := func() {
		sh.mu.Lock()
		if e.refs--; e.refs == 0 && sh.m[key] == e {
			delete(sh.m, key)
		}
		sh.mu.Unlock()
	}
	rel, err := e.b.Acquire(ctx, maxWait)
	if err != nil {
		unref()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { rel(); unref() }) }, nil
}

// InFlight returns the number of slots held for key.
func (s *Bulkheads) InFlight(key string) int {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.m[key]; e != nil {
		return e.b.InFlight()
	}
	return 0
}

// Len returns the number of keys with calls in flight or waiting.
func (s *Bulkheads) Len() int {
	s.init()
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

func (s *Bulkheads) init() {
	s.once.Do(func() {
		s.seed = maphash.MakeSeed()
		for i := range s.shards {
			s.shards[i].m = make(map[string]*bulkheadEntry)
		}
	})
}

func (s *Bulkheads) shard(key string) *bulkheadShard {
	s.init()
	return &s.shards[maphash.String(s.seed, key)%uint64(len(s.shards))]
}
