package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/app"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/internal/drill"
	"github.com/toolhub/toolhub/internal/loadgen"
)

// bench runs the HTTP load generator: an example vendor and a hub in this
// process, the same calls made directly and through /mcp, as a ratio.
func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// Hidden: the processes of the hop bench (--hop).
	if len(args) > 0 {
		switch args[0] {
		case "proxy":
			return benchProxy(ctx, args[1:], stderr)
		case "vendor":
			return benchExampleVendor(ctx, args[1:], stderr)
		}
	}
	fs := flags("bench", "[flags]", "Measure calls/s and latency of one tool call made directly to an example vendor\nover streamable HTTP and through toolhub's /mcp, in one run, and print the ratio.\nWith --hop: the hop table (direct, bare ReverseProxy, toolhub /mcp/vendors/{vendor}).", stderr)
	conc := fs.Int("concurrency", 8, "concurrent MCP clients (one session each)")
	dur := fs.Duration("duration", 5*time.Second, "measured time per phase (with --limiter: how long the hubs push)")
	failover := fs.Float64("failover", 0, "instead: run the failover drill at this many calls/s (weather-a fails, weather-b takes over) and print what happened")
	split := fs.Bool("split", false, "run the hub in its own process (the production shape) and report its CPU time per call")
	pin := fs.Bool("pin", false, "with --split: pin the hub to the last CPU and the load generator and vendor to the others")
	hop := fs.Bool("hop", false, "instead: the hop table: one tools/call of mcp-go's conformance server directly, through a bare\nhttputil.ReverseProxy and through toolhub /mcp/vendors/{vendor}, each hop in its own process, shared\nand pinned, with the hop's CPU per call; then --sessions held open against toolhub for its memory")
	hopConc := fs.String("hop-concurrency", "1,16,64", "with --hop: the concurrencies measured")
	hopShapes := fs.String("hop-shapes", "shared,pinned", "with --hop: the shapes measured (shared: every process on every CPU; pinned: the hop on the last CPU)")
	protocol := fs.String("protocol", mcp.ProtocolVersion20250326, "with --hop: the MCP revision the load generator speaks")
	vendorBin := fs.String("vendor-bin", "", "with --hop: mcp-go's conformance server binary; empty: built from the module cache with go build")
	rounds := fs.Int("hop-rounds", 3, "with --hop: rounds each phase is split into, taken turn about (direct, proxy, toolhub, …)")
	sessions := fs.Int("sessions", 1000, "with --hop: MCP sessions held open against toolhub to measure its memory; 0 skips it")
	hopTrace := fs.String("hop-trace", "", "with --hop: write an execution trace (runtime/trace) of each hub's life to this file, the hub's pid appended\n(for the pinned c=16 run: --hop-shapes pinned --hop-concurrency 16 --sessions 0; read with go tool trace)")
	soak := fs.Bool("soak", false, "instead: the soak: toolhub /mcp/vendors/{vendor} in front of mcp-go's conformance server held at\n--soak-load of its saturation for --soak-duration, sampling the hub's RSS, goroutines and p99 every --soak-every")
	soakDur := fs.Duration("soak-duration", 4*time.Minute, "with --soak: how long the load is held")
	soakEvery := fs.Duration("soak-every", 10*time.Second, "with --soak: how often it is sampled")
	soakLoad := fs.Float64("soak-load", 0.7, "with --soak: the share of saturation offered, in (0, 1]")
	soakConc := fs.Int("soak-concurrency", 16, "with --soak: clients")
	limiter := addLimiterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *soak:
		if !(*soakLoad > 0 && *soakLoad <= 1) || *soakDur <= 0 || *soakEvery <= 0 || *soakConc <= 0 {
			return fmt.Errorf("bench --soak: --soak-load must be in (0, 1], --soak-duration, --soak-every and --soak-concurrency positive")
		}
		rep, err := benchSoak(ctx, soakOptions{VendorBin: *vendorBin, Concurrency: *soakConc, Load: *soakLoad,
			Duration: *soakDur, Every: *soakEvery, Progress: stderr})
		if err != nil {
			return err
		}
		rep.Markdown(stdout)
		return nil
	case *hop:
		conc, err := parseInts(*hopConc)
		if err != nil {
			return err
		}
		var hubEnv []string
		if *hopTrace != "" {
			abs, err := filepath.Abs(*hopTrace)
			if err != nil {
				return err
			}
			hubEnv = append(hubEnv, "TOOLHUB_SERVE_TRACE="+abs)
		}
		rep, err := benchHop(ctx, hopOptions{Protocol: *protocol, Concurrency: conc, Shapes: strings.Split(*hopShapes, ","),
			Duration: *dur, Rounds: *rounds, VendorBin: *vendorBin, Sessions: *sessions, Progress: stderr, HubEnv: hubEnv})
		if err != nil {
			return err
		}
		rep.Markdown(stdout)
		return nil
	case *limiter.on:
		return benchLimiter(ctx, limiter, *dur, stdout)
	case *split:
		return benchSplit(ctx, *conc, *dur, *pin, stdout, stderr)
	case *failover > 0:
		return benchFailover(ctx, *failover, stdout)
	}
	return benchDirect(ctx, *conc, *dur, stdout, stderr)
}

// benchFailover runs the failover drill at rate calls/s and prints what
// happened.
func benchFailover(ctx context.Context, rate float64, stdout io.Writer) error {
	l, err := drill.NewLab(ctx, drill.LabOptions{Config: drill.FailoverConfig, Vendors: drillvendors.Server})
	if err != nil {
		return err
	}
	defer l.Close()
	rep, err := drill.Failover(ctx, l, rate, time.Second, drill.FaultFail)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, rep)
	return nil
}

// benchDirect is bench's default: the same call direct to weather-a and
// through a hub in this process, and their ratio.
func benchDirect(ctx context.Context, conc int, dur time.Duration, stdout, stderr io.Writer) error {
	vendorURL, vendorAddr, stopVendor, err := benchVendor()
	if err != nil {
		return err
	}
	defer stopVendor()
	hubURL, stopHub, err := benchHub(ctx, vendorURL, vendorAddr)
	if err != nil {
		return err
	}
	defer stopHub()

	fmt.Fprintf(stdout, "HTTP load: weather-a/current_weather, %d clients, %v per phase, GOMAXPROCS=%d\n", conc, dur, runtimeProcs())
	o := loadgen.Options{Tool: "current_weather", Arguments: map[string]any{"city": "Paris"}, Concurrency: conc, Duration: dur, Progress: stderr}
	o.URL = vendorURL
	direct, err := loadgen.Run(ctx, "direct to vendor", o)
	if err != nil {
		return err
	}
	o.URL, o.Tool = hubURL, "weather-a__current_weather"
	stopProfiles, err := benchProfiles()
	if err != nil {
		return err
	}
	through, err := loadgen.Run(ctx, "through toolhub /mcp", o)
	stopProfiles()
	if err != nil {
		return err
	}
	printThrough(stdout, direct, through)
	return nil
}

// printThrough prints the load runs straight to the vendor and through
// toolhub, and what toolhub costs: its throughput against the direct one,
// and the latency it adds at p50 and p99.
func printThrough(w io.Writer, direct, through loadgen.Result) {
	fmt.Fprintln(w, direct)
	fmt.Fprintln(w, through)
	fmt.Fprintf(w, "ratio: throughput %.2fx direct; added p50 %.3f ms, added p99 %.3f ms\n",
		through.PerSec/direct.PerSec, float64((through.P50-direct.P50).Microseconds())/1000, float64((through.P99-direct.P99).Microseconds())/1000)
}

// benchHub serves a hub in this process with weather-a at vendorURL, and
// waits for the vendor's tools: the hub's /mcp URL and a func that stops
// it.
func benchHub(ctx context.Context, vendorURL, vendorAddr string) (url string, stop func(), err error) {
	var undo []func()
	stop = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	data, err := os.MkdirTemp("", "toolhub-bench-")
	if err != nil {
		return "", nil, err
	}
	undo = append(undo, func() { os.RemoveAll(data) })
	cfg, err := config.Parse([]byte(fmt.Sprintf("data: %s\noutbound: {allow: [%q]}\nvendors:\n  - id: weather-a\n    mcp: {transport: http, url: %s}\n", data, vendorAddr, vendorURL)))
	if err != nil {
		return "", nil, err
	}
	a, err := app.New(ctx, cfg, &app.Options{Version: version, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return "", nil, err
	}
	undo = append(undo, func() { a.Close() })
	hln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hctx, cancel := context.WithCancel(ctx)
	undo = append(undo, cancel)
	go a.Serve(hctx, hln)
	for i := 0; len(a.Catalog.VendorTools("weather-a")) == 0; i++ {
		if i > 200 {
			return "", nil, fmt.Errorf("weather-a did not connect: %+v", a.Manager.Status("weather-a"))
		}
		time.Sleep(25 * time.Millisecond)
	}
	return "http://" + hln.Addr().String() + "/mcp", stop, nil
}

// benchProfiles starts the profiles the environment asks for around the
// measured phase: a CPU profile to $TOOLHUB_BENCH_CPUPROFILE, block and
// mutex profiles to $TOOLHUB_BENCH_BLOCKPROFILE(.mutex), written by stop.
func benchProfiles() (stop func(), err error) {
	var undo []func()
	stop = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if p := os.Getenv("TOOLHUB_BENCH_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		undo = append(undo, func() { f.Close() }, pprof.StopCPUProfile)
	}
	if p := os.Getenv("TOOLHUB_BENCH_BLOCKPROFILE"); p != "" {
		runtime.SetBlockProfileRate(10000)
		runtime.SetMutexProfileFraction(10)
		undo = append(undo, func() {
			if f, err := os.Create(p); err == nil {
				_ = pprof.Lookup("block").WriteTo(f, 0)
				f.Close()
			}
			if f, err := os.Create(p + ".mutex"); err == nil {
				_ = pprof.Lookup("mutex").WriteTo(f, 0)
				f.Close()
			}
		})
	}
	return stop, nil
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// benchVendor serves the example vendor weather-a over streamable HTTP on
// a loopback port: its MCP URL, its host:port, and a func that stops it.
func benchVendor() (url, addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, err
	}
	h, closeVendor, err := exampleVendorHandler()
	if err != nil {
		ln.Close()
		return "", "", nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	addr = ln.Addr().String()
	return "http://" + addr + "/mcp", addr, func() { srv.Close(); closeVendor() }, nil
}

// exampleVendorHandler is the example vendor weather-a over streamable
// HTTP (at /mcp) and a func that closes it.
func exampleVendorHandler() (http.Handler, func(), error) {
	v, err := vendors.New(vendors.WeatherA, nil)
	if err != nil {
		return nil, nil, err
	}
	h, err := vendors.Handler(vendors.HTTP, v)
	if err != nil {
		v.Close()
		return nil, nil, err
	}
	return h, func() { v.Close() }, nil
}
