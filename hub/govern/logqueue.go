package govern

import (
	"log/slog"
	"sync"
	"time"
)

// DefaultLogQueue is a good [Options].LogQueue for a server: a burst of
// 1024 calls within one write interval costs no call its line's encoding.
const DefaultLogQueue = 1024

// logEvery is how often the log queue's writer takes what is queued
// while calls come fast, and logKick how many lines make it take them at
// once (or half the queue, when smaller): on a loaded 2-core VM the writer
// was seen to wake milliseconds after its timer or a kick, and with a
// kick at half the queue the calls of those milliseconds filled it (a
// third to four fifths of the lines were encoded by their calls; with a
// kick at 128 lines, 1-3%).
//
// When calls came one at a time, a wake-up every logEvery took one or
// two lines (3,356 wake-ups for 6,813 calls in a c=1 trace), each a
// goroutine switch and a write(2) beside the call path: the wait doubles
// every round, from logEvery to logSlowest, while the writer runs, and a
// burst is still taken at once by the kick at logKick lines. After
// logIdleRounds rounds that find nothing the writer stops, and the next
// line starts it again (from logEvery).
const (
	logEvery      = time.Millisecond
	logSlowest    = 16 * time.Millisecond
	logKick       = 128
	logIdleRounds = 16
)

// logQueue holds decision-log lines for one goroutine to encode and write
// off the call path: a call copies its line (a fixed-size [callLine]) into
// the pending batch, which never grows past its capacity; the writer takes
// the whole batch at once and hands its lines to the handler, in order.
type logQueue struct {
	h      slog.Handler
	size   int
	kickAt int // lines that make the writer take them at once

	mu      sync.Mutex
	pending []callLine // cap size once a line came
	spare   []callLine // the batch the writer handed last, emptied
	running bool       // a writer goroutine is on
	closed  bool

	kick chan struct{}  // kickAt lines are queued, or the queue is closed: take them now
	runs sync.WaitGroup // the writer goroutine

	hmu sync.Mutex // held while a batch is handled: batches go out in order
	buf []byte     // where a batch is encoded for the JSON handler, under hmu
}

func newLogQueue(h slog.Handler, size int) *logQueue {
	return &logQueue{h: h, size: size, kickAt: max(1, min(logKick, size/2)), kick: make(chan struct{}, 1)}
}

// pushed says what became of a line given to [logQueue.push].
type pushed int

const (
	lineQueued  pushed = iota
	queueFull          // the caller logs the line itself
	queueClosed        // likewise
)

// push queues a copy of l, starting the writer when it is off.
func (q *logQueue) push(l *callLine) pushed {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return queueClosed
	}
	if q.pending == nil {
		q.pending = make([]callLine, 0, q.size)
	}
	if len(q.pending) == cap(q.pending) {
		q.mu.Unlock()
		return queueFull
	}
	q.pending = append(q.pending, *l)
	kick := len(q.pending) == q.kickAt
	start := !q.running
	if start {
		q.running = true
		q.runs.Add(1)
	}
	q.mu.Unlock()
	if start {
		go q.run()
	} else if kick {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
	return lineQueued
}

// run is the writer: it hands what is queued to the handler every
// logEvery to logSlowest while lines come, and stops when none came for a
// while or the queue is closed.
func (q *logQueue) run() {
	defer q.runs.Done()
	every := logEvery
	t := time.NewTimer(every)
	defer t.Stop()
	for idle := 0; ; {
		if q.flush() > 0 {
			idle = 0
		} else {
			idle++
		}
		every = min(2*every, logSlowest)
		q.mu.Lock()
		if q.closed || idle >= logIdleRounds && len(q.pending) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		select {
		case <-t.C:
		case <-q.kick:
		}
		t.Reset(every)
	}
}

// flush hands every line queued before it to the handler, and returns
// how many it handed.
func (q *logQueue) flush() int {
	q.hmu.Lock()
	defer q.hmu.Unlock()
	q.mu.Lock()
	batch := q.pending
	if len(batch) == 0 {
		q.mu.Unlock()
		return 0
	}
	q.pending, q.spare = q.spare, nil
	q.mu.Unlock()
	q.handle(batch)
	clear(batch) // no call's context or values kept past its line
	q.mu.Lock()
	q.spare = batch[:0]
	q.mu.Unlock()
	return len(batch)
}

// handle hands a batch of lines to the handler, in order. When the
// handler is [NewJSONHandler]'s, the lines it would write from their
// records are encoded straight from them into one buffer, written with
// one Write.
func (q *logQueue) handle(batch []callLine) {
	jh, _ := q.h.(*jsonHandler)
	b := q.buf[:0]
	for i := range batch {
		l := &batch[i]
		if jh != nil {
			var ok bool
			if b, ok = appendLine(b, l); ok {
				continue
			}
			if len(b) > 0 {
				_, _ = jh.lw.Write(b)
				b = b[:0]
			}
		}
		_ = q.h.Handle(l.ctx, l.record())
	}
	if len(b) > 0 {
		_, _ = jh.lw.Write(b)
	}
	if cap(b) <= 1<<20 {
		q.buf = b[:0]
	}
}

// close stops the writer and hands what is queued to the handler; lines
// after it are the callers' to log.
func (q *logQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
	q.runs.Wait()
	q.flush()
}
