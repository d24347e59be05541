package harness

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/app"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/servers"
)

// ParseConfig parses cfg, with each old/new pair of replace replaced, as
// a toolhub config, failing the test on an error.
func ParseConfig(t testing.TB, cfg string, replace ...string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(strings.NewReplacer(replace...).Replace(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// InProcess is a toolhub (app.New) inside the test process, serving its
// HTTP surface on a loopback port: the tests that reach into the hub (its
// manager, catalog, gateway, ledger) while driving it from outside.
type InProcess struct {
	*app.App
	URL string // http://127.0.0.1:port

	stopOnce sync.Once
	stop     func()
}

// StartInProcess builds a toolhub of cfg and opts (nil: the defaults),
// serves it on a loopback port and waits until the vendors ready names
// are ready (AwaitVendor). It is stopped when the test ends, or by Stop.
func StartInProcess(t testing.TB, cfg *config.Config, opts *app.Options, ready ...string) *InProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		a.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Serve(ctx, ln) }()
	h := &InProcess{App: a, URL: "http://" + ln.Addr().String(), stop: func() { cancel(); <-done; a.Close() }}
	t.Cleanup(h.Stop)
	for _, v := range ready {
		h.AwaitVendor(t, v, 0)
	}
	return h
}

// Stop stops serving and closes the hub; only the first call does it.
func (h *InProcess) Stop() { h.stopOnce.Do(h.stop) }

// AwaitVendor waits up to 60 s until vendor is ready, serves tools, and
// has been restarted at least minRestarts times, and returns its status.
func (h *InProcess) AwaitVendor(t testing.TB, vendor string, minRestarts int) servers.VendorStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := h.Manager.Status(vendor)
		if st.State == servers.StateReady && st.Tools > 0 && st.Restarts >= minRestarts {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("vendor %s not ready: %+v", vendor, st)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not timing
	}
}
