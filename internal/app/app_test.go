package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/servers"
)

// exampleVendor serves one example vendor over streamable HTTP on loopback
// and returns its MCP endpoint.
func exampleVendor(t *testing.T, name string) string {
	t.Helper()
	_, base := serveExample(t, name)
	return base + "/mcp"
}

// serveExample serves one example vendor over streamable HTTP on loopback
// and returns it and its base URL (http://127.0.0.1:port).
func serveExample(t *testing.T, name string) (*vendors.Vendor, string) {
	t.Helper()
	v, err := vendors.New(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := vendors.Handler(vendors.HTTP, v)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { v.Close(); srv.Close() })
	return v, "http://" + ln.Addr().String()
}

func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitTools(t *testing.T, a *App, vendor string, want bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	// Tools reach the catalog just before the vendor is marked ready.
	for (len(a.Catalog.VendorTools(vendor)) > 0 && a.Manager.Status(vendor).State == servers.StateReady) != want {
		if time.Now().After(deadline) {
			t.Fatalf("vendor %s: tools present = %v, want %v; status %+v", vendor, !want, want, a.Manager.Status(vendor))
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
}

func TestReload(t *testing.T) {
	wa, maps := exampleVendor(t, vendors.WeatherA), exampleVendor(t, vendors.Maps)
	data := t.TempDir()
	base := fmt.Sprintf("data: %s\noutbound: {allow: [127.0.0.0/8]}\nvendors:\n  - id: weather-a\n    mcp: {transport: http, url: %s}\n", data, wa)
	ctx := context.Background()
	a, err := New(ctx, parse(t, base), &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	waitTools(t, a, "weather-a", true)
	before := a.Manager.Status("weather-a")

	// A call in flight while the config is reloaded is not dropped.
	slow := make(chan error, 1)
	go func() {
		_, err := a.Gateway.Call(ctx, &hub.Call{Tenant: "default", Name: "weather-a__current_weather", Arguments: map[string]any{"city": "Oslo"}})
		slow <- err
	}()

	// A bad config is refused; the old one keeps serving.
	bad := &config.Config{Addr: "127.0.0.1:0", Data: data, MaxBodyBytes: 1 << 20, Vendors: a.Config().Vendors}
	bad.Capabilities = []config.Capability{{Name: "x.y", Chain: nil}}
	if err := a.Reload(ctx, bad); err == nil || !strings.Contains(err.Error(), "chain is empty") {
		t.Fatalf("bad reload: err = %v", err)
	}
	// A good config adds a vendor and keeps the unchanged one connected.
	if err := a.Reload(ctx, parse(t, base+fmt.Sprintf("  - id: maps\n    mcp: {transport: http, url: %s}\n", maps))); err != nil {
		t.Fatal(err)
	}
	waitTools(t, a, "maps", true)
	if err := <-slow; err != nil {
		t.Errorf("call across the reload: %v", err)
	}
	after := a.Manager.Status("weather-a")
	if after.State != servers.StateReady || after.Restarts != before.Restarts || !after.ConnectedSince.Equal(before.ConnectedSince) {
		t.Errorf("weather-a was reconnected by a reload that did not change it: before %+v after %+v", before, after)
	}
	// Removing a vendor takes its tools out of the catalog.
	if err := a.Reload(ctx, parse(t, base)); err != nil {
		t.Fatal(err)
	}
	waitTools(t, a, "maps", false)
}
