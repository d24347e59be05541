package main

import (
	"strings"
	"testing"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
)

// TestCallTimeout: `toolhub call --timeout` is the call's one deadline at
// the hub: a vendor that hangs (its own timeout is 10s) ends the call at
// the caller's deadline, after one try, instead of 10s per try.
func TestCallTimeout(t *testing.T) {
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: `
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - {id: weather-a, mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}, timeout: 10s, probe: {disabled: true}}
`})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetMode("weather-a", drill.FaultHang); err != nil {
		t.Fatal(err)
	}
	out, code := runCmd(t, "call", "weather-a__current_weather", `{"city":"Oslo"}`, "--timeout", "300ms", "--hub", l.HubURL)
	if code == 0 || !strings.Contains(out, "toolhub call: timeout:") || strings.Contains(out, "within 10s") {
		t.Errorf("call --timeout 300ms to a hanging vendor: exit %d, %s; want the caller's deadline", code, out)
	}
	if n := l.Vendors["weather-a"].Counters().CallsTotal; n != 1 {
		t.Errorf("the vendor saw %d calls, want 1 (no retry can finish in 300ms)", n)
	}
	if out, code := runCmd(t, "call", "weather-a__current_weather", `{"city":"Oslo"}`, "--timeout", "-1s", "--hub", l.HubURL); code == 0 || !strings.Contains(out, "positive") {
		t.Errorf("--timeout -1s: exit %d, %s", code, out)
	}
}
