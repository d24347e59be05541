package vendors

import (
	"net"
	"net/http"
)

// ServeVendors serves the example vendors named in opts (a nil *Options
// means the defaults) on one loopback port, each under /<name> over
// streamable HTTP, and returns them, the host:port and a func that closes
// them and the server.
func ServeVendors(opts map[string]*Options) (map[string]*Vendor, string, func(), error) {
	vs := map[string]*Vendor{}
	mux := http.NewServeMux()
	closeAll := func() {
		for _, v := range vs {
			v.Close()
		}
	}
	for name, o := range opts {
		v, err := New(name, o)
		if err != nil {
			closeAll()
			return nil, "", nil, err
		}
		vs[name] = v
		if err := v.Mount(mux, "/"+name, HTTP); err != nil {
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
