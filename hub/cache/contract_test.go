package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub/cache"
)

// testContract is the one suite every Cache implementation passes.
func testContract(t *testing.T, newCache func(t *testing.T, now func() time.Time) cache.Cache) {
	ctx := context.Background()
	type env struct {
		c   cache.Cache
		clk *clock
	}
	setup := func(t *testing.T) env {
		clk := newClock()
		return env{newCache(t, clk.Now), clk}
	}
	mustGet := func(t *testing.T, c cache.Cache, key string) ([]byte, time.Time, bool) {
		t.Helper()
		v, at, ok, err := c.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return v, at, ok
	}
	t.Run("missing", func(t *testing.T) {
		e := setup(t)
		if _, _, ok := mustGet(t, e.c, "nope"); ok {
			t.Fatal("found a key never set")
		}
	})
	t.Run("round trip", func(t *testing.T) {
		e := setup(t)
		val := []byte("a\x00b\xffc")
		if err := e.c.Set(ctx, "k", val, time.Minute, 0); err != nil {
			t.Fatal(err)
		}
		v, at, ok := mustGet(t, e.c, "k")
		if !ok || string(v) != string(val) || !at.Equal(e.clk.Now()) {
			t.Fatalf("got %q %v %v; want %q stored at %v", v, at, ok, val, e.clk.Now())
		}
	})
	t.Run("overwrite", func(t *testing.T) {
		e := setup(t)
		_ = e.c.Set(ctx, "k", []byte("one"), time.Minute, 0)
		e.clk.Advance(10 * time.Second)
		_ = e.c.Set(ctx, "k", []byte("two"), time.Minute, 0)
		v, at, ok := mustGet(t, e.c, "k")
		if !ok || string(v) != "two" || !at.Equal(e.clk.Now()) {
			t.Fatalf("got %q %v %v", v, at, ok)
		}
		if n, _ := e.c.Size(ctx); n != int64(len("k")+len("two")) {
			t.Fatalf("size = %d, want %d", n, len("k")+len("two"))
		}
	})
	t.Run("kept for ttl plus keep", func(t *testing.T) {
		e := setup(t)
		_ = e.c.Set(ctx, "k", []byte("v"), time.Minute, time.Hour)
		e.clk.Advance(time.Minute + time.Hour - time.Nanosecond)
		if _, _, ok := mustGet(t, e.c, "k"); !ok {
			t.Fatal("gone before ttl+keep")
		}
		e.clk.Advance(time.Nanosecond)
		if _, _, ok := mustGet(t, e.c, "k"); ok {
			t.Fatal("still there at ttl+keep")
		}
	})
	t.Run("delete", func(t *testing.T) {
		e := setup(t)
		_ = e.c.Set(ctx, "k", []byte("v"), time.Minute, 0)
		if err := e.c.Delete(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Delete(ctx, "never"); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := mustGet(t, e.c, "k"); ok {
			t.Fatal("found after delete")
		}
	})
	t.Run("delete prefix", func(t *testing.T) {
		e := setup(t)
		keys := []string{"a:1", "a:2", "ab:1", "b:1", "x*[?:1", "x*[?:2", "xa:1"}
		for _, k := range keys {
			_ = e.c.Set(ctx, k, []byte("v"), time.Minute, 0)
		}
		for _, tc := range []struct {
			prefix string
			want   int
		}{{"a:", 2}, {"x*[?:", 2}, {"zzz", 0}} {
			n, err := e.c.DeletePrefix(ctx, tc.prefix)
			if err != nil || n != tc.want {
				t.Fatalf("DeletePrefix(%q) = %d, %v; want %d", tc.prefix, n, err, tc.want)
			}
		}
		for _, k := range []string{"ab:1", "b:1", "xa:1"} {
			if _, _, ok := mustGet(t, e.c, k); !ok {
				t.Errorf("%q deleted by another prefix", k)
			}
		}
	})
	t.Run("size is exact", func(t *testing.T) {
		e := setup(t)
		var want int64
		for i := range 50 {
			k, v := fmt.Sprintf("key-%d", i), make([]byte, i*7)
			_ = e.c.Set(ctx, k, v, time.Minute, 0)
			want += int64(len(k) + len(v))
		}
		if n, err := e.c.Size(ctx); err != nil || n != want {
			t.Fatalf("size = %d, %v; want %d", n, err, want)
		}
		_ = e.c.Delete(ctx, "key-49")
		want -= int64(len("key-49") + 49*7)
		if n, _ := e.c.Size(ctx); n != want {
			t.Fatalf("size after delete = %d; want %d", n, want)
		}
	})
	t.Run("bad ttl", func(t *testing.T) {
		e := setup(t)
		for _, tc := range [][2]time.Duration{{0, 0}, {-1, 0}, {time.Second, -1}} {
			if err := e.c.Set(ctx, "k", nil, tc[0], tc[1]); !errors.Is(err, cache.ErrBadTTL) {
				t.Errorf("Set(ttl %v, keep %v) = %v, want ErrBadTTL", tc[0], tc[1], err)
			}
		}
	})
}

func TestMemoryContract(t *testing.T) {
	testContract(t, func(t *testing.T, now func() time.Time) cache.Cache {
		return cache.NewMemory(&cache.MemoryOptions{Now: now})
	})
}

func TestRedisContract(t *testing.T) {
	rc := redisClient(t)
	testContract(t, func(t *testing.T, now func() time.Time) cache.Cache {
		c := cache.NewRedis(rc, &cache.RedisOptions{Prefix: uniquePrefix(t), Now: now})
		t.Cleanup(func() { _, _ = c.DeletePrefix(context.Background(), "") })
		return c
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
