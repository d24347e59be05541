package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

// TestServeRunsTheExampleVendors is `make run` on other ports: `serve` on
// the embedded defaults serves the example vendors itself (the hub does
// not import them), and the README's tour works: a tool call, a
// capability and a plan.
func TestServeRunsTheExampleVendors(t *testing.T) {
	vendorsAddr, err := freeAddr() // benchhop.go
	if err != nil {
		t.Fatal(err)
	}
	hubAddr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := strings.ReplaceAll(string(config.DefaultYAML()), "127.0.0.1:9100", vendorsAddr)
	cfg = strings.Replace(cfg, "addr: 127.0.0.1:8080", "addr: "+hubAddr, 1)
	path := filepath.Join(dir, "toolhub.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var logs strings.Builder // written by serve until done
	go func() {
		var out strings.Builder
		done <- run(ctx, []string{"serve", "--config", path, "--data", filepath.Join(dir, "data")}, &out, &logs)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, logs.String())
		}
	}()

	hub := "http://" + hubAddr
	var out string
	drilltest.WaitFor(t, 60*time.Second, "a call to an example vendor", func() bool {
		var code int
		out, code = runCmd(t, "call", "--hub", hub, "weather-a__current_weather", `{"city":"Paris"}`)
		return code == 0
	})
	if !strings.Contains(out, "weather-a") {
		t.Errorf("call: %s", out)
	}
	if out, code := runCmd(t, "call", "--hub", hub, "weather.current", `{"city":"Paris"}`); code != 0 || !strings.Contains(out, "weather-a") {
		t.Errorf("capability call: %d %s", code, out)
	}
	if out, code := runCmd(t, "plan", "--hub", hub, "plan a trip from Paris to Lyon: weather, route and restaurants"); code != 0 || !strings.Contains(out, "maps") {
		t.Errorf("plan: %d %s", code, out)
	}
}
