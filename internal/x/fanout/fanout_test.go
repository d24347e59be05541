package fanout

import (
	"slices"
	"testing"
)

func TestSubscribeEmitCancel(t *testing.T) {
	var l List[int]
	var a, b []int
	cancelA := l.Subscribe(func(e int) { a = append(a, e) })
	l.Subscribe(func(e int) { b = append(b, e) })
	l.Emit(1)
	cancelA()
	l.Emit(2)
	if !slices.Equal(a, []int{1}) || !slices.Equal(b, []int{1, 2}) {
		t.Errorf("a got %v, want [1]; b got %v, want [1 2]", a, b)
	}
}

// A subscriber that cancels itself while called does not deadlock.
func TestCancelInsideEmit(t *testing.T) {
	var l List[string]
	n := 0
	var cancel func()
	cancel = l.Subscribe(func(string) { n++; cancel() })
	l.Emit("x")
	l.Emit("y")
	if n != 1 {
		t.Errorf("called %d times, want 1", n)
	}
}
