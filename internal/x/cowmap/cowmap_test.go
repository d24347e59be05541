package cowmap

import (
	"strconv"
	"testing"
)

// TestForkKeepsTheOriginal: writes to a fork (and to its forks) never show
// in the map it was forked from.
func TestForkKeepsTheOriginal(t *testing.T) {
	var a Map[int]
	for i := 0; i < 2000; i++ {
		a.Set(strconv.Itoa(i), i)
	}
	b := a.Fork()
	for i := 0; i < 2000; i += 2 {
		b.Delete(strconv.Itoa(i))
	}
	b.Set("x", -1)
	c := b.Fork()
	c.Set("1", 100)
	if a.Len() != 2000 || b.Len() != 1001 || c.Len() != 1001 {
		t.Fatalf("lens %d %d %d", a.Len(), b.Len(), c.Len())
	}
	for i := 0; i < 2000; i++ {
		if v, ok := a.Get(strconv.Itoa(i)); !ok || v != i {
			t.Fatalf("a[%d] = %d, %v", i, v, ok)
		}
		if _, ok := b.Get(strconv.Itoa(i)); ok != (i%2 == 1) {
			t.Fatalf("b has %d: %v", i, ok)
		}
	}
	if v, _ := b.Get("1"); v != 1 {
		t.Fatalf("b[1] = %d after c set it", v)
	}
	if a.Has("x") || !c.Has("x") {
		t.Fatal("x")
	}
	n := 0
	c.Range(func(string, int) bool { n++; return true })
	if n != 1001 {
		t.Fatalf("range %d", n)
	}
}
