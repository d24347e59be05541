package drill

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/toolhub/toolhub/internal/app"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/servers"
)

// Lab is a hub wired to vendors served in this process.
type Lab struct {
	App     *app.App
	Vendors map[string]Vendor
	URL     string // the vendors' base URL (each at /<name>/mcp)
	HubURL  string // the hub's base URL
	served  *ServedVendors
	stop    context.CancelFunc
	done    chan struct{}
	data    string
}

// LabOptions configure a lab. Zero fields mean the defaults.
type LabOptions struct {
	// Config is toolhub.yaml without data and addr; "{{vendors}}" is
	// replaced by the vendors' base URL, "{{vendors_addr}}" by their
	// host:port.
	Config string
	// Vendors serves every vendor it names, healthy, for the lab; required.
	// toolhub ships none: callers pass the example vendors
	// (examples/drillvendors).
	Vendors VendorServer
	// Logger; nil discards.
	Logger *slog.Logger
}

// NewLab starts the vendors of o.Vendors and a hub on loopback.
func NewLab(ctx context.Context, o LabOptions) (*Lab, error) {
	if err := needVendors("LabOptions", o.Vendors); err != nil {
		return nil, err
	}
	l := &Lab{done: make(chan struct{})}
	opts := map[string]*VendorOptions{}
	for _, name := range o.Vendors.Names() {
		opts[name] = nil
	}
	served, err := o.Vendors.Serve(opts)
	if err != nil {
		return nil, err
	}
	l.served, l.Vendors = served, served.Vendors
	l.URL = "http://" + served.Addr

	if l.data, err = os.MkdirTemp("", "toolhub-drill-"); err != nil {
		l.Close()
		return nil, err
	}
	text := strings.NewReplacer("{{vendors}}", l.URL, "{{vendors_addr}}", served.Addr).Replace(o.Config)
	cfg, err := config.Parse([]byte("data: " + l.data + "\n" + text))
	if err != nil {
		l.Close()
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if l.App, err = app.New(ctx, cfg, &app.Options{Logger: log}); err != nil {
		l.Close()
		return nil, err
	}
	hln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l.Close()
		return nil, err
	}
	l.HubURL = "http://" + hln.Addr().String()
	sctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	go func() { defer close(l.done); _ = l.App.Serve(sctx, hln) }()
	for _, v := range cfg.Vendors {
		if err := l.WaitReady(ctx, v.ID); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// WaitReady waits until a vendor is connected and its tools are in the
// catalog (the tools arrive just before the vendor is marked ready).
func (l *Lab) WaitReady(ctx context.Context, vendor string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(l.App.Catalog.VendorTools(vendor)) == 0 || l.App.Manager.Status(vendor).State != servers.StateReady {
		select {
		case <-ctx.Done():
			return fmt.Errorf("vendor %s never became ready: %+v", vendor, l.App.Manager.Status(vendor))
		case <-time.After(10 * time.Millisecond): // polling a condition
		}
	}
	return nil
}

// SetMode changes a vendor's fault, keeping its latency.
func (l *Lab) SetMode(vendor string, f Fault) error {
	v, ok := l.Vendors[vendor]
	if !ok {
		return fmt.Errorf("drill: lab has no vendor %q", vendor)
	}
	k := v.Knobs()
	k.Fault = f
	return v.SetKnobs(k)
}

// Close stops the hub and the vendors.
func (l *Lab) Close() {
	if l.stop != nil {
		l.stop()
		<-l.done
	}
	if l.App != nil {
		l.App.Close()
	}
	if l.served != nil {
		l.served.Close()
	}
	if l.data != "" {
		os.RemoveAll(l.data)
	}
}

// DataDir is the hub's data folder.
func (l *Lab) DataDir() string { return l.data }

// needVendors says why a drill configured by options (the type's name)
// cannot run without a vendor server.
func needVendors(options string, vendors VendorServer) error {
	if vendors == nil {
		return fmt.Errorf("drill: %s.Vendors: a vendor server is required", options)
	}
	return nil
}

// needProcesses says why a drill that starts toolhub instances of its own,
// configured by options, cannot run: it needs the toolhub executable and a
// vendor server.
func needProcesses(options, binary string, vendors VendorServer) error {
	if binary == "" {
		return fmt.Errorf("drill: %s.Binary: the toolhub executable is required", options)
	}
	return needVendors(options, vendors)
}
