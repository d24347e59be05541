package servers

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/registry"
)

// The default health probe (Manager.Ping, used when a vendor has no
// business probe) must send a request the vendor answers, on every
// protocol revision: mcp-go's Client.Ping sends nothing on 2026-07-28
// (issue 12, defect 19), so there it is server/discover, and a real ping
// before. A vendor that stops answering fails the probe.
func TestDefaultProbeReachesVendor(t *testing.T) {
	for _, tt := range []struct {
		name, protocol, method string
	}{
		{"modern", "2026-07-28", "server/discover"},
		{"legacy", mcp.LATEST_LEGACY_PROTOCOL_VERSION, "ping"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &Options{ProtocolVersion: tt.protocol, HealthInterval: -1, ConnectTimeout: 2 * time.Second})
			hv := newHTTPVendor(t, registry.TransportHTTP, newMCPServer())
			if err := h.m.Add(context.Background(), httpSpec("hv", registry.TransportHTTP, hv.url())); err != nil {
				t.Fatal(err)
			}
			h.waitReady("hv")
			before := hv.count(tt.method)
			if err := h.m.Ping(ctxTimeout(t, 10*time.Second), "hv"); err != nil {
				t.Fatalf("probe of a live vendor: %v", err)
			}
			if got := hv.count(tt.method); got != before+1 {
				t.Fatalf("the probe sent %d %s requests, want 1", got-before, tt.method)
			}
			// The vendor goes silent: the probe fails instead of passing blind.
			hv.setFault(tt.method, func(w http.ResponseWriter, r *http.Request, _ json.RawMessage) bool {
				<-r.Context().Done()
				return true
			})
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if err := h.m.Ping(ctx, "hv"); err == nil {
				t.Fatal("the probe of a silent vendor passed")
			}
		})
	}
}
