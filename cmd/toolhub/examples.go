package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
)

// exampleVendors serves the example vendors (examples/vendors) in this
// process, for the config's `examples:` key (`make run`, the embedded
// defaults). The hub itself (internal/app) knows nothing of them: it
// reaches them over HTTP like any vendor.
type exampleVendors struct {
	srv     *http.Server
	vendors []*vendors.Vendor
}

// startExamples serves every example vendor on addr, each at /<id>/mcp
// (streamable HTTP), but sd at /sd/sse (the legacy SSE transport).
func startExamples(addr string, log *slog.Logger) (*exampleVendors, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("example vendors: %v (is another toolhub running? remove `examples:` from the config to use vendors elsewhere)", err)
	}
	mux := http.NewServeMux()
	ex := &exampleVendors{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	for _, name := range vendors.Names() {
		v, err := vendors.New(name, nil)
		if err != nil {
			ex.close()
			ln.Close()
			return nil, err
		}
		ex.vendors = append(ex.vendors, v)
		t := vendors.HTTP
		if name == "sd" {
			t = vendors.SSE // one example vendor speaks the legacy SSE transport
		}
		if err := v.Mount(mux, "/"+name, t); err != nil {
			ex.close()
			ln.Close()
			return nil, err
		}
	}
	go func() { _ = ex.srv.Serve(ln) }()
	log.Info("example vendors listening", "addr", ln.Addr().String(), "vendors", vendors.Names())
	return ex, nil
}

func (e *exampleVendors) close() {
	for _, v := range e.vendors {
		v.Close()
	}
	e.srv.Close()
}
