//go:build unix

package servers

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerOpen reports whether a kept connection is still open at the other
// end, with one non-blocking peek: nothing to read means open; end of
// stream (the vendor closed it while it was idle) or unexpected bytes
// mean it must not carry a request. net/http's Transport learns the same
// from the reader goroutine it keeps on every idle connection.
func peerOpen(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = errors.Is(err, unix.EAGAIN)
		return true
	})
	return err == nil && open
}
