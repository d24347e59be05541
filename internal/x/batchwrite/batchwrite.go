// Package batchwrite batches the writes of many goroutines into one
// write(2) each: [Writer.Write] copies its bytes into a pending buffer
// and returns, and one goroutine writes what is pending with one Write
// while the next batch fills. toolhub serve writes its log (the decision
// log's line of every call) through one, so that no call makes a system
// call of its own to log.
//
//	w := batchwrite.New(os.Stderr, nil)
//	defer w.Close() // writes what is pending
//	log := slog.New(slog.NewJSONHandler(w, nil))
//
// Lines still pending when the process is killed are lost: it is for
// logs, not for records that must survive (the usage meter's
// write-ahead log waits for its writes).
package batchwrite

import (
	"io"
	"runtime"
	"sync"
)

// Options configure [New]; nil means the defaults.
type Options struct {
	// Limit is the most bytes pending: a Write that finds that many waits
	// until the writer has taken them (a slow or blocked destination
	// slows its writers down instead of growing the buffer). Zero means
	// 1 MiB.
	Limit int
}

// Writer is an io.Writer whose writes are batched; safe for concurrent
// use. Each Write's bytes are written whole and in order.
type Writer struct {
	w     io.Writer
	limit int

	mu       sync.Mutex
	room     sync.Cond // signalled when the writer takes the pending batch or writes one
	pending  []byte
	spare    []byte
	appended int64 // bytes ever appended
	written  int64 // bytes ever handed to w (written or failed)
	err      error // the first error of w
	closed   bool

	wmu  sync.Mutex // held across a write to w: batches go out in order
	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

// New starts a Writer writing to w.
func New(w io.Writer, opts *Options) *Writer {
	b := &Writer{w: w, limit: 1 << 20, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	if opts != nil && opts.Limit > 0 {
		b.limit = opts.Limit
	}
	b.room.L = &b.mu
	go b.run()
	return b
}

// Write copies p into the pending batch. It returns len(p) and the first
// error the destination returned, if any; once closed, it writes p
// (after what is pending) before it returns.
func (b *Writer) Write(p []byte) (int, error) {
	b.mu.Lock()
	if b.closed {
		b.pending = append(b.pending, p...)
		b.appended += int64(len(p))
		b.mu.Unlock()
		b.writeBatch()
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(p), b.err
	}
	for len(b.pending) > 0 && len(b.pending)+len(p) > b.limit && !b.closed {
		b.room.Wait()
	}
	if len(b.pending) == 0 {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	b.pending = append(b.pending, p...)
	b.appended += int64(len(p))
	err := b.err
	b.mu.Unlock()
	return len(p), err
}

func (b *Writer) run() {
	defer close(b.done)
	for {
		select {
		case <-b.kick:
			runtime.Gosched() // let writers already runnable join this batch
			b.writeBatch()
		case <-b.quit:
			return
		}
	}
}

// writeBatch writes the pending batch, if any.
func (b *Writer) writeBatch() {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.mu.Lock()
	buf := b.pending
	if len(buf) == 0 {
		b.mu.Unlock()
		return
	}
	b.pending, b.spare = b.spare[:0], nil
	b.room.Broadcast()
	b.mu.Unlock()
	_, err := b.w.Write(buf)
	b.mu.Lock()
	if err != nil && b.err == nil {
		b.err = err
	}
	b.written += int64(len(buf))
	if cap(buf) <= b.limit {
		b.spare = buf[:0]
	}
	b.room.Broadcast()
	b.mu.Unlock()
}

// Flush waits until every byte written before it has been handed to the
// destination, and returns the destination's first error.
func (b *Writer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	want := b.appended
	if len(b.pending) > 0 {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	for b.written < want && !b.closed {
		b.room.Wait()
	}
	return b.err
}

// Close writes what is pending and stops the writer; later writes go to
// the destination directly. It does not close the destination.
func (b *Writer) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return b.err
	}
	b.closed = true
	b.room.Broadcast()
	b.mu.Unlock()
	close(b.quit)
	<-b.done
	b.writeBatch()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
