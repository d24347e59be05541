package sqlledger

import (
	"io"
	"net"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
)

// TestPauseLetsTheNetworkIn: with one P and the writer's goroutine always
// runnable, a goroutine whose socket has data runs only after the
// scheduler polls the network. After each pause it must have run. With
// runtime.Gosched in place of pause, the writer was picked again before
// any poll: 199 of 200 missed.
func TestPauseLetsTheNetworkIn(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	a, b := tcpPair(t)
	var got atomic.Int64
	go func() {
		buf := make([]byte, 1)
		for {
			if _, err := b.Read(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	p := newPauser()
	defer p.close()
	const rounds = 200
	missed := 0
	for i := range rounds {
		for got.Load() < int64(i) { // let the reader reach its next Read
			runtime.Gosched()
		}
		if _, err := a.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		p.pause()
		if got.Load() != int64(i+1) {
			missed++
		}
	}
	// A pause whose timer fires before the writer blocks (the thread
	// descheduled for 20µs) returns without a poll: a few may miss.
	if missed > rounds/10 {
		t.Errorf("in %d of %d pauses the reader with data waiting did not run", missed, rounds)
	}
}

// TestAppendPausesBetweenInserts: with one P, an Append pauses after each
// INSERT of its batch but the last; with more, it does not pause.
func TestAppendPausesBetweenInserts(t *testing.T) {
	l := openLedger(t)
	events := synthetic(0, 2000) // 31 INSERTs of 64 rows and one of 16
	func() {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		if err := l.Append(t.Context(), events); err != nil {
			t.Fatal(err)
		}
	}()
	if got := l.w.pauses; got != 31 {
		t.Errorf("one P: %d pauses in an Append of 32 INSERTs, want 31", got)
	}
	if runtime.GOMAXPROCS(0) > 1 {
		if err := l.Append(t.Context(), synthetic(2000, 2000)); err != nil {
			t.Fatal(err)
		}
		if got := l.w.pauses; got != 31 {
			t.Errorf("%d P: %d pauses after the second Append, want still 31", runtime.GOMAXPROCS(0), got)
		}
	}
}

// TestAppendLetsCallsInOnOneCore: with one P, a big Append must not keep
// the Go scheduler from polling the network until it is done. A ping-pong
// over loopback TCP runs while 5,000 events are appended; each trip needs
// the poller twice. When the writer only yielded with runtime.Gosched,
// the poller ran only when sysmon or an idle thread happened to poll: 7 to
// 545 trips in ten runs, 7 when nothing else helped. The pauser polls at
// every INSERT (~400 to 1,000 trips; those figures are for 20,000
// events). Counted, not timed: at least one
// trip per two INSERTs. (That the writer pauses at all is
// TestAppendPausesBetweenInserts.)
func TestAppendLetsCallsInOnOneCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l := openLedger(t)
	const n, rowsPerInsert = 5000, 64
	events := synthetic(0, n)

	c, echo := tcpPair(t)
	go io.Copy(echo, echo)
	trip := func() error {
		b := []byte{1}
		if _, err := c.Write(b); err != nil {
			return err
		}
		_, err := io.ReadFull(c, b)
		return err
	}
	if err := trip(); err != nil {
		t.Fatal(err)
	}
	var trips atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if trip() != nil {
				return
			}
			trips.Add(1)
		}
	}()
	before := trips.Load()
	if err := l.Append(t.Context(), events); err != nil {
		t.Fatal(err)
	}
	during := trips.Load() - before
	close(stop)
	<-done
	if inserts := int64(n / rowsPerInsert); during < inserts/2 {
		t.Errorf("%d ping-pongs got through during an Append of %d INSERTs", during, inserts)
	}
	t.Logf("%d ping-pongs during the Append", during)
}

func openLedger(t *testing.T) *Ledger {
	t.Helper()
	l, err := Open(t.Context(), filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func synthetic(from, n int) []billing.Event {
	evs := make([]billing.Event, n)
	for i := range evs {
		evs[i] = ledgertest.Synthetic(from + i)
	}
	return evs
}

func tcpPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	if a, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if b = <-accepted; b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}
