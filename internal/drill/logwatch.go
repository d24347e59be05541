package drill

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// logWatch is a slog.Handler that notes when each log message was first
// (and last) seen after a mark, and passes every record on: the drills
// read a hub's own words ("shared limiter unreachable") as their clock.
type logWatch struct {
	next slog.Handler
	s    *watchState
}

type watchState struct {
	mu    sync.Mutex
	first map[string]time.Time
	count map[string]int
}

func newLogWatch(next slog.Handler) *logWatch {
	if next == nil {
		next = slog.DiscardHandler
	}
	return &logWatch{next: next, s: &watchState{first: map[string]time.Time{}, count: map[string]int{}}}
}

func (w *logWatch) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || w.next.Enabled(ctx, l)
}

func (w *logWatch) Handle(ctx context.Context, r slog.Record) error {
	w.s.mu.Lock()
	if _, ok := w.s.first[r.Message]; !ok {
		w.s.first[r.Message] = r.Time
	}
	w.s.count[r.Message]++
	w.s.mu.Unlock()
	if !w.next.Enabled(ctx, r.Level) {
		return nil
	}
	return w.next.Handle(ctx, r)
}

func (w *logWatch) WithAttrs(as []slog.Attr) slog.Handler {
	return &logWatch{next: w.next.WithAttrs(as), s: w.s}
}

func (w *logWatch) WithGroup(name string) slog.Handler {
	return &logWatch{next: w.next.WithGroup(name), s: w.s}
}

// seen returns when msg was first logged.
func (w *logWatch) seen(msg string) (time.Time, bool) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	t, ok := w.s.first[msg]
	return t, ok
}

// times returns how often msg was logged.
func (w *logWatch) times(msg string) int {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.count[msg]
}
