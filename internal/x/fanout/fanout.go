// Package fanout hands each event to every subscriber: the catalog's
// change subscriptions and the MCP manager's vendor notifications.
//
//	var subs fanout.List[Change]
//	cancel := subs.Subscribe(func(c Change) { … })
//	subs.Emit(Change{Version: 2})
//	cancel()
package fanout

import "sync"

// List is a set of subscribers to events of type E. The zero value has
// none and is ready to use; a List must not be copied after first use. It
// is safe for concurrent use.
type List[E any] struct {
	mu   sync.Mutex
	fns  map[int]func(E)
	next int
}

// Subscribe calls fn with every event emitted until cancel is called.
func (l *List[E]) Subscribe(fn func(E)) (cancel func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fns == nil {
		l.fns = map[int]func(E){}
	}
	id := l.next
	l.next++
	l.fns[id] = fn
	return func() {
		l.mu.Lock()
		delete(l.fns, id)
		l.mu.Unlock()
	}
}

// Emit calls every subscriber with e, on the caller's goroutine and
// outside the lock: a subscriber may subscribe or cancel meanwhile.
func (l *List[E]) Emit(e E) {
	l.mu.Lock()
	fns := make([]func(E), 0, len(l.fns))
	for _, fn := range l.fns {
		fns = append(fns, fn)
	}
	l.mu.Unlock()
	for _, fn := range fns {
		fn(e)
	}
}
