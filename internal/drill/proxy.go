package drill

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from a loopback port to a target (a real
// Redis or PostgreSQL) until it is cut: then the port refuses connections
// and every forwarded connection is closed, as if the server had died.
// Restore listens on the same port again. Or it hangs: connections are
// taken and nothing is answered, as by a stopped server (SIGSTOP).
type Proxy struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns map[net.Conn]struct{}
	held  chan struct{}  // while hung: closed when the proxy forwards again
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
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			held := p.held
			p.mu.Unlock()
			if held != nil {
				<-held // hung: what was sent waits
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
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

// Hang stops the target answering: connections are still taken (new
// ones too) and kept open, but nothing sent either way is passed on until
// [Proxy.Restore], as with a server stopped by SIGSTOP.
func (p *Proxy) Hang() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

// IsCut reports whether the proxy is cut.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ln == nil
}

// Restore listens on the proxy's port again, or ends a [Proxy.Hang]
// (what waited is passed on). Another process may have taken the port
// meanwhile: Restore retries for a second, then fails.
func (p *Proxy) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
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
	p.mu.Lock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
	p.mu.Unlock()
	p.Cut()
	p.wg.Wait()
	return nil
}
