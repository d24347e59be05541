package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/hub/cache/cachetest"
)

func TestMemoryContract(t *testing.T) {
	cachetest.Run(t, func(t *testing.T, now func() time.Time) cache.Cache {
		return cache.NewMemory(&cache.MemoryOptions{Now: now})
	})
}

func TestMemoryLRUByteBudget(t *testing.T) {
	ctx := context.Background()
	m := cache.NewMemory(&cache.MemoryOptions{MaxBytes: 100})
	val := make([]byte, 28) // 2-byte key + 28 = 30 bytes an entry
	for _, k := range []string{"k1", "k2", "k3"} {
		_ = m.Set(ctx, k, val, time.Minute, 0)
	}
	if _, _, ok, _ := m.Get(ctx, "k1"); !ok { // k1 is now the most recent
		t.Fatal("k1 missing")
	}
	_ = m.Set(ctx, "k4", val, time.Minute, 0) // 120 > 100: evict the LRU, k2
	if _, _, ok, _ := m.Get(ctx, "k2"); ok {
		t.Error("k2 should have been evicted (least recently used)")
	}
	for _, k := range []string{"k1", "k3", "k4"} {
		if _, _, ok, _ := m.Get(ctx, k); !ok {
			t.Errorf("%s evicted", k)
		}
	}
	if n, _ := m.Size(ctx); n != 90 {
		t.Errorf("size = %d, want 90", n)
	}
	if m.Evictions() != 1 {
		t.Errorf("evictions = %d, want 1", m.Evictions())
	}
	// One big entry evicts as many as it needs.
	_ = m.Set(ctx, "k5", make([]byte, 68), time.Minute, 0) // 70 bytes: 90+70-100 → evict k1 and k3
	if n, _ := m.Size(ctx); n != 100 || m.Len() != 2 {
		t.Errorf("size = %d, len = %d; want 100, 2", n, m.Len())
	}
	// Larger than the whole budget: not stored, nothing evicted.
	_ = m.Set(ctx, "huge", make([]byte, 200), time.Minute, 0)
	if _, _, ok, _ := m.Get(ctx, "huge"); ok || m.Len() != 2 {
		t.Errorf("an entry over the budget was stored (len %d)", m.Len())
	}
	// Overwrites keep the accounting exact.
	_ = m.Set(ctx, "k4", make([]byte, 8), time.Minute, 0)
	if n, _ := m.Size(ctx); n != 80 {
		t.Errorf("size after overwrite = %d, want 80", n)
	}
}
