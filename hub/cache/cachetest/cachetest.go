// Package cachetest is the contract suite of [cache.Cache]: the in-process
// cache (hub/cache) and the Redis one (hub/cache/rediscache) both pass it.
//
//	func TestContract(t *testing.T) {
//		cachetest.Run(t, func(t *testing.T, now func() time.Time) cache.Cache {
//			return cache.NewMemory(&cache.MemoryOptions{Now: now})
//		})
//	}
package cachetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub/cache"

	"github.com/toolhub/toolhub/internal/x/clocktest"
)

// clock is a settable clock (internal/x/clocktest).
type clock = clocktest.Clock

func newClock() *clock { return clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// Run is the one suite every [cache.Cache] implementation passes.
// newCache returns an empty cache whose clock is now.
func Run(t *testing.T, newCache func(t *testing.T, now func() time.Time) cache.Cache) {
	s := suite{newCache}
	t.Run("missing", s.missing)
	t.Run("round trip", s.roundTrip)
	t.Run("overwrite", s.overwrite)
	t.Run("kept for ttl plus keep", s.keptForTTLPlusKeep)
	t.Run("delete", s.delete)
	t.Run("delete prefix", s.deletePrefix)
	t.Run("size is exact", s.sizeIsExact)
	t.Run("bad ttl", s.badTTL)
}

// suite is the contract suite on the implementation newCache makes.
type suite struct {
	newCache func(t *testing.T, now func() time.Time) cache.Cache
}

// env is one subtest's cache and its clock.
type env struct {
	c   cache.Cache
	clk *clock
}

// setup is a new empty cache on a clock of its own.
func (s suite) setup(t *testing.T) env {
	clk := newClock()
	return env{s.newCache(t, clk.Now), clk}
}

// mustGet is c.Get, failing the test on an error.
func mustGet(t *testing.T, c cache.Cache, key string) ([]byte, time.Time, bool) {
	t.Helper()
	v, at, ok, err := c.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return v, at, ok
}

// missing: missing.
func (s suite) missing(t *testing.T) {
	e := s.setup(t)
	if _, _, ok := mustGet(t, e.c, "nope"); ok {
		t.Fatal("found a key never set")
	}
}

// roundTrip: round trip.
func (s suite) roundTrip(t *testing.T) {
	ctx := context.Background()
	e := s.setup(t)
	val := []byte("a\x00b\xffc")
	if err := e.c.Set(ctx, "k", val, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	v, at, ok := mustGet(t, e.c, "k")
	if !ok || string(v) != string(val) || !at.Equal(e.clk.Now()) {
		t.Fatalf("got %q %v %v; want %q stored at %v", v, at, ok, val, e.clk.Now())
	}
}

// overwrite: overwrite.
func (s suite) overwrite(t *testing.T) {
	ctx := context.Background()
	e := s.setup(t)
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
}

// keptForTTLPlusKeep: kept for ttl plus keep.
func (s suite) keptForTTLPlusKeep(t *testing.T) {
	ctx := context.Background()
	e := s.setup(t)
	_ = e.c.Set(ctx, "k", []byte("v"), time.Minute, time.Hour)
	e.clk.Advance(time.Minute + time.Hour - time.Nanosecond)
	if _, _, ok := mustGet(t, e.c, "k"); !ok {
		t.Fatal("gone before ttl+keep")
	}
	e.clk.Advance(time.Nanosecond)
	if _, _, ok := mustGet(t, e.c, "k"); ok {
		t.Fatal("still there at ttl+keep")
	}
}

// delete: delete.
func (s suite) delete(t *testing.T) {
	ctx := context.Background()
	e := s.setup(t)
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
}

// deletePrefix: delete prefix.
func (s suite) deletePrefix(t *testing.T) {
	ctx := context.Background()
	e := s.setup(t)
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
}

// sizeIsExact: size is exact.
func (s suite) sizeIsExact(t *testing.T) {
	ctx := context.Background()
	e := s.setup(t)
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
}

// badTTL: bad ttl.
func (s suite) badTTL(t *testing.T) {
	ctx := context.Background()
	e := s.setup(t)
	for _, tc := range [][2]time.Duration{{0, 0}, {-1, 0}, {time.Second, -1}} {
		if err := e.c.Set(ctx, "k", nil, tc[0], tc[1]); !errors.Is(err, cache.ErrBadTTL) {
			t.Errorf("Set(ttl %v, keep %v) = %v, want ErrBadTTL", tc[0], tc[1], err)
		}
	}
}
