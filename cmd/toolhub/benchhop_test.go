package main

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/internal/loadgen"
)

// asToolhub, set in a child's environment, makes this test binary run as
// the toolhub command: the hop bench starts its proxy and hub from
// os.Executable(), which in a test is the test binary.
const asToolhub = "TOOLHUB_TEST_BINARY_IS_TOOLHUB"

func TestMain(m *testing.M) {
	if os.Getenv(asToolhub) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// checkHopRows fails unless every shape has the three paths, each with
// calls, latencies and no errors, and the proxy and the hub a CPU time;
// the vendor and the load generator have one over all the rows.
func checkHopRows(t *testing.T, rep *hopReport, shapes ...string) {
	t.Helper()
	if want := 3 * len(shapes); len(rep.Rows) != want {
		t.Fatalf("%d rows, want %d: %+v", len(rep.Rows), want, rep.Rows)
	}
	// /proc counts CPU time in 10 ms ticks: one short phase of a loaded
	// machine may show none for the vendor, all of them together do not.
	var vendor, client time.Duration
	for _, row := range rep.Rows {
		vendor += row.VendorPerCall
		client += row.ClientPerCall
	}
	if vendor <= 0 || client <= 0 {
		t.Errorf("vendor CPU per call %v, client's %v, summed over the rows; want both > 0", vendor, client)
	}
	for _, shape := range shapes {
		for _, path := range []string{hopDirect, hopProxy, hopHub} {
			row, ok := rep.row(shape, 1, path)
			if !ok {
				t.Errorf("%s c=1 %s: no row", shape, path)
				continue
			}
			r := row.Res
			if r.Calls == 0 || r.PerSec <= 0 || r.P50 <= 0 || r.P99 <= 0 || r.Errors != 0 {
				t.Errorf("%s c=1 %s: %v", shape, path, r)
			}
			if path != hopDirect && (row.CPU <= 0 || row.PerCall <= 0) {
				t.Errorf("%s c=1 %s: hop CPU %v, per call %v; want both > 0", shape, path, row.CPU, row.PerCall)
			}
		}
	}
}

// TestBenchHopEndToEnd runs the hop bench briefly against mcp-go's
// conformance server (built from the module cache), in both shapes: every
// path answers, the hops' CPU is read, the hub holds its sessions, and the
// table has a row per path. No figure is judged: this is not a timing test.
func TestBenchHopEndToEnd(t *testing.T) {
	rep, err := benchHop(t.Context(), hopOptions{
		Env:         []string{asToolhub + "=1"},
		Concurrency: []int{1},
		Duration:    500 * time.Millisecond,
		Warmup:      100 * time.Millisecond,
		Sessions:    10,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Note != "" || rep.Tool != "test_simple_text" {
		t.Fatalf("vendor %s (%s), note %q: want mcp-go's conformance server", rep.Vendor, rep.Tool, rep.Note)
	}
	checkHopRows(t, rep, "shared", "pinned")
	if rep.Upstream == "" {
		t.Error("the revision toolhub speaks to the vendor is not reported")
	}
	if m := rep.Memory; m == nil || m.Sessions != 10 || m.Before <= 0 || m.After <= 0 || m.Peak < m.After {
		t.Errorf("memory: %+v", m)
	}
	// Each shape's GOMAXPROCS, as the processes report it: one P for the
	// hub and the proxy pinned to one CPU.
	if len(rep.Procs) != 2 {
		t.Fatalf("GOMAXPROCS of %d shapes, want 2: %+v", len(rep.Procs), rep.Procs)
	}
	for _, p := range rep.Procs {
		if p.Hub <= 0 || p.Proxy <= 0 || p.Client <= 0 {
			t.Errorf("%s: GOMAXPROCS %+v", p.Shape, p)
		}
		if p.Shape == "pinned" && (p.Hub != 1 || p.Proxy != 1) {
			t.Errorf("pinned to one CPU: GOMAXPROCS hub %d, proxy %d; want 1", p.Hub, p.Proxy)
		}
	}
	var out bytes.Buffer
	rep.Markdown(&out)
	for _, want := range []string{"pinned: GOMAXPROCS hub 1", "| shared | 1 | direct |", "| shared | 1 | bare ReverseProxy |", "| pinned | 1 | toolhub `/mcp/vendors/conf` |", "10 sessions held open"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, out.String())
		}
	}
}

// TestBenchHopFallsBackToTheExampleVendor: where the conformance server
// cannot be built (here: no go command on PATH), the bench runs against
// the example vendor weather-a in its own process, and says so.
func TestBenchHopFallsBackToTheExampleVendor(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	rep, err := benchHop(t.Context(), hopOptions{
		Env:         []string{asToolhub + "=1"},
		Concurrency: []int{1},
		Shapes:      []string{"shared"},
		Duration:    500 * time.Millisecond,
		Warmup:      100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tool != "current_weather" || !strings.Contains(rep.Note, "weather-a") {
		t.Fatalf("vendor %s (%s), note %q: want the example vendor weather-a, noted", rep.Vendor, rep.Tool, rep.Note)
	}
	checkHopRows(t, rep, "shared")
}

// TestBenchSoakEndToEnd runs the soak briefly: a saturation, then paced
// windows, each with the hub's RSS and goroutines read. No figure is
// judged: this is not a timing test.
func TestBenchSoakEndToEnd(t *testing.T) {
	rep, err := benchSoak(t.Context(), soakOptions{
		Env:         []string{asToolhub + "=1"},
		Concurrency: 4,
		Saturation:  500 * time.Millisecond,
		Duration:    2 * time.Second,
		Every:       500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Saturation <= 0 || rep.Rate != rep.Saturation*0.7 {
		t.Fatalf("saturation %.0f, rate %.0f: want 70%% of a positive saturation", rep.Saturation, rep.Rate)
	}
	if len(rep.Samples) < 2 {
		t.Fatalf("%d samples in 2s every 500ms", len(rep.Samples))
	}
	for _, s := range rep.Samples {
		if s.RSS <= 0 || s.Goroutines <= 0 || s.Res.Calls+s.Res.Errors == 0 {
			t.Errorf("sample %+v", s)
		}
	}
	var out bytes.Buffer
	rep.Markdown(&out)
	if !strings.Contains(out.String(), "| hub RSS MB | hub goroutines |") || !strings.Contains(out.String(), "Flat") {
		t.Errorf("the report:\n%s", out.String())
	}
}

// TestHopTargetsAreIssue30s: the verdict lines judge c=16 (both shapes)
// by ≥ 1.00× the proxy's calls/s, pinned c=16 by hub CPU per call ≤ 1.00×,
// and c=1 by p50 ≤ +20 µs.
func TestHopTargetsAreIssue30s(t *testing.T) {
	row := func(shape string, c int, path string, perSec float64, p50 time.Duration, cpu time.Duration) hopRow {
		return hopRow{Shape: shape, C: c, Path: path, Res: loadgen.Result{PerSec: perSec, P50: p50}, PerCall: cpu}
	}
	for _, tt := range []struct {
		hub, proxy hopRow
		want       []string
	}{
		{row("pinned", 16, hopHub, 950, 0, 99*time.Microsecond), row("pinned", 16, hopProxy, 1000, 0, 100*time.Microsecond), []string{
			"pinned, c=16: calls/s 0.95× the proxy's (target ≥ 1.00×): **not met**",
			"pinned, c=16: hub CPU per call 0.99× the proxy's (target ≤ 1.00×): met"}},
		{row("shared", 16, hopHub, 1010, 0, 0), row("shared", 16, hopProxy, 1000, 0, 0), []string{
			"shared, c=16: calls/s 1.01× the proxy's (target ≥ 1.00×): met"}},
		{row("shared", 1, hopHub, 100, 130*time.Microsecond, 0), row("shared", 1, hopProxy, 100, 100*time.Microsecond, 0), []string{
			"shared, c=1: p50 +30 µs over the proxy's (target ≤ +20 µs): **not met**"}},
	} {
		if diff := cmp.Diff(tt.want, hopTargets(tt.hub, tt.proxy)); diff != "" {
			t.Errorf("%s c=%d (-want +got):\n%s", tt.hub.Shape, tt.hub.C, diff)
		}
	}
}
