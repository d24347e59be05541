package drill

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
)

// Gate holds vendor calls while closed: set a vendor's
// [vendors.Options].Sleep to [Gate.Sleep]. The zero Gate is open, and a
// call it holds finishes even if its caller died, the way a vendor does
// when the caller's process is killed.
type Gate struct {
	// Cancelable: a held call returns with its context's error when the
	// context ends; false waits for [Gate.Open] whatever the context.
	Cancelable bool

	mu sync.Mutex
	ch chan struct{} // nil: open
}

// Close makes the vendor calls from now on wait for [Gate.Open].
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
}

// Open lets every held call go on, and the later ones pass.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

// Sleep is a vendor's sleep: it waits while the gate is closed.
func (g *Gate) Sleep(ctx context.Context, _ time.Duration) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	if !g.Cancelable {
		<-ch
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ServeVendors serves the example vendors named in opts (a nil
// *vendors.Options means the defaults) on one loopback port, each under
// /<name>, and returns them, the host:port and a func that closes them
// and the server.
func ServeVendors(opts map[string]*vendors.Options) (map[string]*vendors.Vendor, string, func(), error) {
	vs := map[string]*vendors.Vendor{}
	mux := http.NewServeMux()
	closeAll := func() {
		for _, v := range vs {
			v.Close()
		}
	}
	for name, o := range opts {
		v, err := vendors.New(name, o)
		if err != nil {
			closeAll()
			return nil, "", nil, err
		}
		vs[name] = v
		if err := v.Mount(mux, "/"+name, vendors.HTTP); err != nil {
			closeAll()
			return nil, "", nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		closeAll()
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	return vs, ln.Addr().String(), func() { closeAll(); srv.Close() }, nil
}
