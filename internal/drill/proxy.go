package drill

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from a loopback port to a target (a real
// Redis or PostgreSQL) until it is cut: then the port refuses connections
// and every forwarded connection is closed, as if the server had died.
// Restore listens on the same port again.
type Proxy struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup // accept loops and copiers
}

// NewProxy starts a proxy to target (host:port) on a free loopback port.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	return p, nil
}

// Addr is the proxy's address (host:port); it stays the same across Cut
// and Restore.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.ln != ln { // cut while dialling
				p.mu.Unlock()
				c.Close()
				up.Close()
				continue
			}
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.wg.Add(2)
			p.mu.Unlock()
			go p.pipe(up, c)
			go p.pipe(c, up)
		}
	}()
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut stops the target from the clients' point of view: new connections
// are refused and open ones are closed.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// IsCut reports whether the proxy is cut.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ln == nil
}

// Restore listens on the proxy's port again. Another process may have
// taken the port meanwhile: Restore retries for a second, then fails.
func (p *Proxy) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return nil
	}
	var err error
	for range 100 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return nil
		}
		time.Sleep(10 * time.Millisecond) // the port is busy: wait for it
	}
	return fmt.Errorf("drill: proxy %s: listen again: %w", p.addr, err)
}

// Close cuts the proxy for good and waits for its goroutines.
func (p *Proxy) Close() error {
	p.Cut()
	p.wg.Wait()
	return nil
}
