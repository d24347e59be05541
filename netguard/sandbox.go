package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
)

// ErrOffLoopback is the cause of a dial or DNS query a [Sandbox] refused.
var ErrOffLoopback = errors.New("netguard: sandbox: off-loopback traffic refused")

// Sandbox keeps a policy's traffic on this machine whatever the policy
// decides: its dialer refuses, in net.Dialer.Control (after the policy's
// checks, before a packet is sent), every address that is not loopback,
// and its resolver sends no DNS query (names resolve from the hosts file
// only). It records every dial it sees and every one it refused, so that a
// test asserts on what the policy refused, and a regression of the policy
// shows as a recorded off-loopback dial instead of traffic leaving the
// machine. Set it as [Options.Sandbox]; config `outbound.loopback_only`.
type Sandbox struct {
	// OnRefuse, when set, is told of each refused dial or DNS query, one
	// at a time and in the order of [Sandbox.Refused] (a lookup asks for
	// A and AAAA records at once).
	OnRefuse func(addr string)

	tell    sync.Mutex // held while a refusal is recorded and told
	mu      sync.Mutex
	dials   []string
	refused []string
}

// Dials returns the addresses dialled so far (refused ones included), in
// order.
func (s *Sandbox) Dials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.dials...)
}

// Refused returns the dials and DNS queries the sandbox refused, in order.
func (s *Sandbox) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

func (s *Sandbox) refuse(addr string) error {
	s.tell.Lock()
	defer s.tell.Unlock()
	s.mu.Lock()
	s.refused = append(s.refused, addr)
	s.mu.Unlock()
	if s.OnRefuse != nil {
		s.OnRefuse(addr)
	}
	return fmt.Errorf("%w: %s", ErrOffLoopback, addr)
}

// control is the dialer's net.Dialer.Control: it runs on the socket
// before connect.
func (s *Sandbox) control(_, address string, _ syscall.RawConn) error {
	s.mu.Lock()
	s.dials = append(s.dials, address)
	s.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return s.refuse(address)
	}
	return nil
}

// dialer returns d with the sandbox's Control.
func (s *Sandbox) dialer(d *net.Dialer) *net.Dialer {
	c := *d
	c.Control = s.control
	c.ControlContext = nil
	return &c
}

// Resolver returns a resolver that answers from the hosts file and sends
// no query.
func (s *Sandbox) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(_ context.Context, _, address string) (net.Conn, error) {
		return nil, s.refuse("dns " + address)
	}}
}
