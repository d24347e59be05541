package sqlledger_test

import (
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/ledgertest"
)

// TestAppendLetsCallsInOnOneCore: with one P, a big Append must not keep
// the Go scheduler from polling the network until it is done. A ping-pong
// over loopback TCP runs while 20,000 events are appended; each trip needs
// the poller twice. When the writer only yielded with runtime.Gosched,
// the poller ran only when sysmon or an idle thread happened to poll: 7 to
// 545 trips in ten runs, 7 when nothing else helped. The pauser polls at
// every INSERT (~500 to 1,000 trips). Counted, not timed: at least one
// trip per two INSERTs.
func TestAppendLetsCallsInOnOneCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l := open(t)
	const n, rowsPerInsert = 20000, 64
	events := make([]billing.Event, n)
	for i := range events {
		events[i] = ledgertest.Synthetic(i)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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
