package sqlledger

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
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
