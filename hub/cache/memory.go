package cache

import (
	"container/list"
	"context"
	"strings"
	"sync"
	"time"
)

// MemoryOptions configure [NewMemory]. A nil *MemoryOptions, and every zero
// field, means the default.
type MemoryOptions struct {
	// MaxBytes is the byte budget (len(key)+len(value) summed over the
	// entries); the least recently used entries are evicted to stay under
	// it, and an entry larger than the whole budget is not stored. Zero
	// means [DefaultMaxBytes].
	MaxBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultMaxBytes is the memory cache's default budget (64 MiB).
const DefaultMaxBytes = 64 << 20

// Memory is an in-process LRU [Cache] with a byte budget and exact
// accounting. One mutex guards it: a Get is a map lookup and a list move.
type Memory struct {
	mu        sync.Mutex
	ll        list.List // front: most recently used; of *memEntry
	m         map[string]*list.Element
	bytes     int64
	max       int64
	now       func() time.Time
	evictions int64
}

type memEntry struct {
	key      string
	val      []byte
	storedAt time.Time
	expires  time.Time
}

func (e *memEntry) size() int64 { return int64(len(e.key) + len(e.val)) }

var _ Cache = (*Memory)(nil)

// NewMemory returns an empty in-process cache.
func NewMemory(opts *MemoryOptions) *Memory {
	m := &Memory{m: map[string]*list.Element{}, max: DefaultMaxBytes, now: time.Now}
	if opts != nil {
		if opts.MaxBytes > 0 {
			m.max = opts.MaxBytes
		}
		if opts.Now != nil {
			m.now = opts.Now
		}
	}
	return m
}

// Get implements [Cache].
func (m *Memory) Get(_ context.Context, key string) ([]byte, time.Time, bool, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.m[key]
	if !ok {
		return nil, time.Time{}, false, nil
	}
	e := el.Value.(*memEntry)
	if !now.Before(e.expires) {
		m.removeLocked(el)
		return nil, time.Time{}, false, nil
	}
	m.ll.MoveToFront(el)
	return e.val, e.storedAt, true, nil
}

// Set implements [Cache]. The value is copied.
func (m *Memory) Set(_ context.Context, key string, value []byte, ttl, keep time.Duration) error {
	if err := CheckTTL(ttl, keep); err != nil {
		return err
	}
	now := m.now()
	e := &memEntry{key: key, val: append([]byte(nil), value...), storedAt: now, expires: now.Add(ttl + keep)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.m[key]; ok {
		m.removeLocked(el)
	}
	if e.size() > m.max {
		return nil // larger than the whole budget: never stored
	}
	m.m[key] = m.ll.PushFront(e)
	m.bytes += e.size()
	for m.bytes > m.max {
		back := m.ll.Back()
		m.removeLocked(back)
		m.evictions++
	}
	return nil
}

func (m *Memory) removeLocked(el *list.Element) {
	e := el.Value.(*memEntry)
	m.ll.Remove(el)
	delete(m.m, e.key)
	m.bytes -= e.size()
}

// Delete implements [Cache].
func (m *Memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.m[key]; ok {
		m.removeLocked(el)
	}
	return nil
}

// DeletePrefix implements [Cache]; it scans every entry.
func (m *Memory) DeletePrefix(_ context.Context, prefix string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, el := range m.m {
		if strings.HasPrefix(k, prefix) {
			m.removeLocked(el)
			n++
		}
	}
	return n, nil
}

// Size implements [Cache]. Expired entries not yet evicted are removed first.
func (m *Memory) Size(context.Context) (int64, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for el := m.ll.Back(); el != nil; {
		prev := el.Prev()
		if !now.Before(el.Value.(*memEntry).expires) {
			m.removeLocked(el)
		}
		el = prev
	}
	return m.bytes, nil
}

// Len returns the number of entries held (expired ones included until
// they are touched).
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// Evictions returns how many entries the byte budget has evicted.
func (m *Memory) Evictions() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.evictions
}
