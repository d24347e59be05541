package batchwrite_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolhub/toolhub/internal/x/batchwrite"
)

// sink records its writes; the first one waits for release when gate is set.
type sink struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	writes  int
	entered chan struct{}
	release chan struct{}
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.writes++
	first := s.writes == 1
	s.mu.Unlock()
	if first && s.release != nil {
		close(s.entered)
		<-s.release
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestConcurrentWritesWholeAndInOrder: every Write's bytes arrive whole,
// each goroutine's in its order, with a limit small enough that writers
// wait for room.
func TestConcurrentWritesWholeAndInOrder(t *testing.T) {
	s := &sink{}
	w := batchwrite.New(s, &batchwrite.Options{Limit: 256})
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				fmt.Fprintf(w, "w%d-%d\n", g, i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	for _, line := range strings.Split(strings.TrimSuffix(s.String(), "\n"), "\n") {
		var g, i int
		if _, err := fmt.Sscanf(line, "w%d-%d", &g, &i); err != nil || g >= writers || i != next[g] {
			t.Fatalf("line %q: want w%d-%d", line, g, next[min(g, writers-1)])
		}
		next[g]++
	}
	for g, n := range next {
		if n != each {
			t.Errorf("writer %d: %d lines, want %d", g, n, each)
		}
	}
}

// TestWritesDuringAWriteGoOutInOne: while the destination is busy with
// one write, the lines written meanwhile pile up and go out in one more.
func TestWritesDuringAWriteGoOutInOne(t *testing.T) {
	s := &sink{entered: make(chan struct{}), release: make(chan struct{})}
	w := batchwrite.New(s, nil)
	w.Write([]byte("first\n"))
	<-s.entered
	var want strings.Builder
	want.WriteString("first\n")
	for i := range 100 {
		line := fmt.Sprintf("line %d\n", i)
		w.Write([]byte(line))
		want.WriteString(line)
	}
	close(s.release)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != want.String() {
		t.Errorf("after Flush the destination holds %q, want %q", got, want.String())
	}
	if s.writes != 2 {
		t.Errorf("%d writes to the destination, want 2 (the busy one, then the 100 lines together)", s.writes)
	}
	w.Close()
	w.Write([]byte("after close\n"))
	if got := s.String(); !strings.HasSuffix(got, "line 99\nafter close\n") {
		t.Errorf("a write after Close: destination ends %q", got[max(0, len(got)-30):])
	}
}
