package billing

import (
	"bufio"
	"fmt"
	"os"
	"sync"
)

// spill is the meter's durable overflow: a directory of append-only
// segments "spill-<seq>.jsonl" in the framing the WAL shares (frame.go),
// one event per line in appendLine's JSON. Segments are replayed oldest
// first and removed once every event is in the ledger.
type spill struct {
	segments

	mu    sync.Mutex
	seq   int
	f     *os.File
	w     *bufio.Writer
	n     int // events in the current segment
	line  []byte
	dirty bool // written since the last fsync
}

func openSpill(dir string) (*spill, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("billing: spill %s: %w", dir, err)
	}
	s := &spill{segments: segments{kind: "spill", dir: dir, prefix: "spill-", suffix: ".jsonl"}}
	segs, err := s.list()
	if err != nil {
		return nil, err
	}
	if len(segs) > 0 {
		s.seq = segs[len(segs)-1]
	}
	return s, nil
}

// write appends events to the current segment (buffered; see sync).
func (s *spill) write(evs []Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		s.seq++
		f, err := os.OpenFile(s.name(s.seq), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return fmt.Errorf("billing: spill: %w", err)
		}
		s.f, s.w, s.n = f, bufio.NewWriterSize(f, 64<<10), 0
	}
	for i := range evs {
		s.line = appendLine(s.line[:0], &evs[i])
		if _, err := s.w.Write(s.line); err != nil {
			return fmt.Errorf("billing: spill: %w", err)
		}
		s.n++
	}
	s.dirty = true
	return nil
}

// sync flushes and fsyncs the current segment if it changed.
func (s *spill) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncLocked()
}

func (s *spill) syncLocked() error {
	if !s.dirty || s.f == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("billing: spill: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("billing: spill: %w", err)
	}
	s.dirty = false
	return nil
}

// rotate closes the current segment so it can be replayed, and returns the
// segments to replay.
func (s *spill) rotate() ([]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		if err := s.syncLocked(); err != nil {
			return nil, err
		}
		s.f.Close()
		s.f, s.w = nil, nil
	}
	return s.list()
}

// pending reports whether there are events on disk or in the buffer.
func (s *spill) pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		return true
	}
	segs, _ := s.list()
	return len(segs) > 0
}

// read calls fn with batches of at most batch events of segment seq.
func (s *spill) read(seq, batch int, fn func([]Event) error) (corrupt int, err error) {
	var evs []Event
	corrupt, err = s.segments.read(seq, func(ev Event) error {
		if evs = append(evs, ev); len(evs) < batch {
			return nil
		}
		err := fn(evs)
		evs = evs[:0]
		return err
	})
	if err == nil && len(evs) > 0 {
		err = fn(evs)
	}
	return corrupt, err
}

func (s *spill) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.syncLocked()
	s.f.Close()
	s.f, s.w = nil, nil
	return err
}
