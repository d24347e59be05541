package billing

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// spill is the meter's durable overflow: a directory of append-only
// segments "spill-<seq>.jsonl", one event per line written as
// "<crc32c of the JSON, 8 hex digits> <JSON>\n". A line whose checksum does
// not match (a torn write at a crash) is skipped and counted. Segments are
// replayed oldest first and removed once every event is in the ledger.
type spill struct {
	dir string

	mu    sync.Mutex
	seq   int
	f     *os.File
	w     *bufio.Writer
	n     int // events in the current segment
	line  []byte
	dirty bool // written since the last fsync
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func openSpill(dir string) (*spill, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("billing: spill %s: %w", dir, err)
	}
	s := &spill{dir: dir}
	segs, err := s.segments()
	if err != nil {
		return nil, err
	}
	if len(segs) > 0 {
		s.seq = segs[len(segs)-1]
	}
	return s, nil
}

func (s *spill) name(seq int) string {
	return filepath.Join(s.dir, fmt.Sprintf("spill-%09d.jsonl", seq))
}

// segments lists the segment numbers on disk, oldest first.
func (s *spill) segments() ([]int, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("billing: spill %s: %w", s.dir, err)
	}
	var out []int
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "spill-")
		n, ok2 := strings.CutSuffix(n, ".jsonl")
		if !ok || !ok2 {
			continue
		}
		if seq, err := strconv.Atoi(n); err == nil {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	return out, nil
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
	return s.segments()
}

// pending reports whether there are events on disk or in the buffer.
func (s *spill) pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		return true
	}
	segs, _ := s.segments()
	return len(segs) > 0
}

// read calls fn with batches of at most batch events of segment seq.
func (s *spill) read(seq, batch int, fn func([]Event) error) (corrupt int, err error) {
	f, err := os.Open(s.name(seq))
	if err != nil {
		return 0, fmt.Errorf("billing: spill: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	var evs []Event
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if ev, ok := decodeSpillLine(line); ok {
				evs = append(evs, ev)
			} else {
				corrupt++
			}
			if len(evs) >= batch {
				if err := fn(evs); err != nil {
					return corrupt, err
				}
				evs = evs[:0]
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return corrupt, fmt.Errorf("billing: spill: %w", err)
		}
	}
	if len(evs) > 0 {
		return corrupt, fn(evs)
	}
	return corrupt, nil
}

func decodeSpillLine(line []byte) (Event, bool) {
	var ev Event
	line = bytes.TrimSuffix(line, []byte("\n"))
	sum, body, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(sum) != 8 {
		return ev, false
	}
	var want [4]byte
	if _, err := hex.Decode(want[:], sum); err != nil {
		return ev, false
	}
	if crc32.Checksum(body, castagnoli) != uint32(want[0])<<24|uint32(want[1])<<16|uint32(want[2])<<8|uint32(want[3]) {
		return ev, false
	}
	if bytes.HasPrefix(body, []byte(compactPrefix)) {
		return decodeCompact(body)
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, false
	}
	return ev, true
}

func (s *spill) remove(seq int) error {
	if err := os.Remove(s.name(seq)); err != nil {
		return fmt.Errorf("billing: spill: %w", err)
	}
	return nil
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
