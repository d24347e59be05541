package breaker

import (
	"slices"
	"strings"
	"sync"
)

// Set holds one [Breaker] per key, created on first use. Keys are the
// caller's: a vendor ("weather-a"), or a vendor's tool ("weather-a/forecast")
// where a tool needs a breaker of its own. Safe for concurrent use.
type Set struct {
	opts     func(key string) *Options
	breakers sync.Map // key → *Breaker
}

// NewSet returns an empty set. opts gives the options of the breaker for a
// key when it is created; nil means defaults for every key. Give every key
// the same OnStateChange: [Change] carries the key.
func NewSet(opts func(key string) *Options) *Set {
	return &Set{opts: opts}
}

// Get returns the breaker for key, creating it if needed.
func (s *Set) Get(key string) *Breaker {
	if b, ok := s.breakers.Load(key); ok {
		return b.(*Breaker)
	}
	var o *Options
	if s.opts != nil {
		o = s.opts(key)
	}
	b, _ := s.breakers.LoadOrStore(key, New(key, o))
	return b.(*Breaker)
}

// Delete forgets the breaker for key (a vendor was removed).
func (s *Set) Delete(key string) { s.breakers.Delete(key) }

// Snapshots returns every breaker's snapshot, sorted by key.
func (s *Set) Snapshots() []Snapshot {
	var out []Snapshot
	s.breakers.Range(func(_, b any) bool {
		out = append(out, b.(*Breaker).Snapshot())
		return true
	})
	slices.SortFunc(out, func(a, b Snapshot) int { return strings.Compare(a.Key, b.Key) })
	return out
}
