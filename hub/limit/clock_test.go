package limit

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/internal/x/clocktest"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// fakeClock is a settable clock (internal/x/clocktest).
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock { return clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}
