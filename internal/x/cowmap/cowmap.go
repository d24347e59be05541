// Package cowmap is a string-keyed map for immutable snapshots that change
// a little at a time: a writer forks the map (copying its shard pointers,
// not its entries) and copies only the shards it writes, so a change of k
// keys costs O(k · n/Shards) instead of O(n), while readers of the old
// snapshot keep reading it without a lock.
package cowmap

import "hash/maphash"

// Shards is the number of shards a map is split in.
const Shards = 512

var seed = maphash.MakeSeed()

// Map is a copy-on-write map. The zero value is an empty map ready to
// write. A Map that has been forked must not be written again: write the
// fork. Reads may run concurrently with each other, not with writes to
// the same Map.
type Map[V any] struct {
	shards [Shards]map[string]V
	owned  [Shards]bool // shards this Map copied (or made) and may write
	n      int
}

func shard(k string) int { return int(maphash.String(seed, k) % Shards) }

// Get returns the value under k.
func (m *Map[V]) Get(k string) (V, bool) {
	v, ok := m.shards[shard(k)][k]
	return v, ok
}

// Has says whether k is in m.
func (m *Map[V]) Has(k string) bool {
	_, ok := m.shards[shard(k)][k]
	return ok
}

// Len is the number of keys.
func (m *Map[V]) Len() int { return m.n }

// writable returns shard s of m, copied first if m shares it.
func (m *Map[V]) writable(s int) map[string]V {
	if !m.owned[s] {
		old := m.shards[s]
		c := make(map[string]V, len(old)+1)
		for k, v := range old {
			c[k] = v
		}
		m.shards[s] = c
		m.owned[s] = true
	}
	return m.shards[s]
}

// Set puts v under k.
func (m *Map[V]) Set(k string, v V) {
	s := shard(k)
	if _, ok := m.shards[s][k]; !ok {
		m.n++
	}
	m.writable(s)[k] = v
}

// Delete removes k.
func (m *Map[V]) Delete(k string) {
	s := shard(k)
	if _, ok := m.shards[s][k]; !ok {
		return
	}
	delete(m.writable(s), k)
	m.n--
}

// Range calls fn for every key until it returns false, in no set order.
func (m *Map[V]) Range(fn func(k string, v V) bool) {
	for _, sh := range m.shards {
		for k, v := range sh {
			if !fn(k, v) {
				return
			}
		}
	}
}

// Fork returns a copy of m that shares m's shards until it writes them.
// m must not be written afterwards.
func (m *Map[V]) Fork() *Map[V] {
	f := &Map[V]{shards: m.shards, n: m.n}
	for i := range m.owned {
		m.owned[i] = false // m gives its shards up: neither may write them in place
	}
	return f
}
