package drill

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves a line echo on loopback.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader) error {
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := r.ReadString('\n')
	return err
}

func TestProxyCutAndRestore(t *testing.T) {
	p, err := NewProxy(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if err := roundTrip(c, r); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Cut()
	if !p.IsCut() {
		t.Error("IsCut = false after Cut")
	}
	if err := roundTrip(c, r); err == nil {
		t.Error("an open connection still works after Cut")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		c2.Close()
		t.Error("a new connection was accepted after Cut")
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("after Restore, on the same address: %v", err)
	}
	defer c3.Close()
	if err := roundTrip(c3, bufio.NewReader(c3)); err != nil {
		t.Fatalf("after Restore: %v", err)
	}
}

// A hung proxy takes connections and answers nothing until Restore; then
// what was sent meanwhile is passed on.
func TestProxyHang(t *testing.T) {
	p, err := NewProxy(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Hang()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("a hung proxy refused the connection: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if line, err := r.ReadString('\n'); err == nil {
		t.Fatalf("a hung proxy answered %q", line)
	}
	_ = c.SetReadDeadline(time.Time{})
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("after Restore: %q %v, want the ping sent while hung", line, err)
	}
}
