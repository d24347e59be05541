package drillvendors_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill"
)

func serve(t *testing.T, opts map[string]*drill.VendorOptions) *drill.ServedVendors {
	t.Helper()
	s, err := drillvendors.Server.Serve(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestKnobs: a drill's faults are the example vendors' modes, and setting
// a drill's knobs keeps the vendor's other knobs.
func TestKnobs(t *testing.T) {
	s := serve(t, map[string]*drill.VendorOptions{
		vendors.Maps:     {Knobs: drill.Knobs{Fault: drill.FaultFail, Latency: 5 * time.Millisecond}},
		vendors.WeatherA: nil,
	})
	if got, want := s.Vendors[vendors.WeatherA].Knobs(), (drill.Knobs{Fault: drill.FaultOK}); got != want {
		t.Errorf("weather-a knobs %+v, want %+v", got, want)
	}
	maps := s.Vendors[vendors.Maps]
	if got, want := maps.Knobs(), (drill.Knobs{Fault: drill.FaultFail, Latency: 5 * time.Millisecond}); got != want {
		t.Errorf("maps knobs %+v, want %+v", got, want)
	}
	ex := maps.(drillvendors.Vendor).Vendor
	k := ex.Knobs()
	k.FailRate, k.Tools = 0.5, []string{"route"}
	if err := ex.SetKnobs(k); err != nil {
		t.Fatal(err)
	}
	if err := maps.SetKnobs(drill.Knobs{Fault: drill.FaultHTTP429}); err != nil {
		t.Fatal(err)
	}
	want := vendors.Knobs{Mode: vendors.ModeHTTP429, FailRate: 0.5, Tools: []string{"route"}}
	if diff := cmp.Diff(want, ex.Knobs()); diff != "" {
		t.Errorf("example knobs (-want +got):\n%s", diff)
	}
	if err := maps.SetKnobs(drill.Knobs{Fault: "flaky"}); !errors.Is(err, vendors.ErrInvalidKnobs) {
		t.Errorf("unknown fault: %v, want %v", err, vendors.ErrInvalidKnobs)
	}
}

// TestGate: a vendor started with a gate holds its calls while the gate is
// closed, and the counters say so.
func TestGate(t *testing.T) {
	g := &drill.Gate{}
	s := serve(t, map[string]*drill.VendorOptions{
		vendors.Maps: {Knobs: drill.Knobs{Latency: time.Hour}, Gate: g},
	})
	c, err := client.NewStreamableHttpClient("http://" + s.Addr + "/maps/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "drillvendors-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	maps := s.Vendors[vendors.Maps]
	g.Close()
	done := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "route"
		req.Params.Arguments = map[string]any{"from": "A", "to": "B"}
		res, err := c.CallTool(context.WithoutCancel(ctx), req)
		if err == nil && res.IsError {
			err = errors.New("tool error")
		}
		done <- err
	}()
	for maps.Counters().InFlight != 1 { // the call reached the gate
		select {
		case err := <-done:
			t.Fatalf("the call went through a closed gate: %v", err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Millisecond): // polling a condition
		}
	}
	g.Open()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := maps.Counters(), (drill.VendorCounters{CallsTotal: 1, OK: 1}); got != want {
		t.Errorf("counters %+v, want %+v", got, want)
	}
}
