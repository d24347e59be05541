package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/internal/loadgen"
)

// The hop bench: one MCP tools/call of a small text tool, made by the same
// load generator in one run against (1) the vendor directly, (2) a bare
// net/http/httputil.ReverseProxy in front of it and (3) toolhub's
// /mcp/vendors/{vendor} in front of it. The proxy and the hub each run in
// their own process (the proxy is this binary's hidden `bench proxy`), so
// the CPU time each spends per call, read from /proc, compares like with
// like. Then toolhub alone holds many client sessions open, for its memory.

// hopOptions configure [benchHop]. Zero fields mean the defaults.
type hopOptions struct {
	// Binary is the toolhub executable that runs the proxy and the hub
	// (and the fallback vendor); default os.Executable(). Env is added to
	// the environment of every process the bench starts.
	Binary string
	Env    []string
	// HubEnv is added to the hub's environment only (after Env): e.g.
	// TOOLHUB_SERVE_TRACE for an execution trace of the hub.
	HubEnv []string
	// VendorBin is mcp-go's conformance server (examples/conformance);
	// "" builds it from the module cache with `go build`. If that fails,
	// the bench falls back to the example vendor weather-a, and says so.
	VendorBin string
	// Protocol is the MCP revision the load generator speaks; default
	// 2025-03-26. The hub picks its own revision upstream.
	Protocol string
	// Concurrency lists the numbers of clients; default 1, 16 and 64.
	Concurrency []int
	// Shapes lists "shared" (every process on every CPU) and "pinned" (the
	// proxy or hub on the last CPU, the load generator and the vendor on
	// the others); default both.
	Shapes []string
	// Duration and Warmup of each phase; default 5s and 1s.
	Duration, Warmup time.Duration
	// Rounds splits each phase's Duration into rounds taken turn about
	// (direct, proxy, hub, direct, proxy, hub, …), each after its own
	// Warmup, so that a slow spell of the machine (this VM's speed drifts
	// by tens of percent over a minute) does not fall on one path alone;
	// default 3.
	Rounds int
	// Sessions held open against the hub for its memory; 0 skips that.
	Sessions int
	// Progress receives progress lines; nil: none.
	Progress io.Writer
}

// hopRow is one measured phase.
type hopRow struct {
	Shape string // "shared" or "pinned"
	C     int
	Path  string // hopDirect, hopProxy or hopHub
	Res   loadgen.Result
	// CPU is the hop process's user+system time over the measured phase
	// and PerCall that divided by the calls it answered (0 for direct).
	CPU, PerCall time.Duration
	// VendorPerCall and ClientPerCall are the vendor's and the load
	// generator's CPU time per call over the phase: what a hop costs the
	// processes it shares CPUs with (the pinned shape's vendor and load
	// generator share every CPU but the hop's).
	VendorPerCall, ClientPerCall time.Duration
}

const (
	hopDirect = "direct"
	hopProxy  = "bare ReverseProxy"
	hopHub    = "toolhub"
)

// hopMemory is the hub's memory with Sessions client sessions open.
type hopMemory struct {
	Sessions                 int
	Before, After, Peak      int64 // VmRSS before, VmRSS after, VmHWM after; bytes
	Protocol, Endpoint, Note string
}

// hopReport is what [benchHop] measured.
type hopReport struct {
	Vendor, Tool, Protocol, Upstream, Note string
	Endpoint                               string // the hub's path
	CPUs                                   int
	Duration, Warmup                       time.Duration
	Rounds                                 int
	Rows                                   []hopRow
	Memory                                 *hopMemory
	// Procs is each shape's GOMAXPROCS, as the processes report it.
	Procs []hopProcs
}

// hopProcs is the GOMAXPROCS of one shape's processes: the hub's (its
// /metrics, go_sched_gomaxprocs_threads), the bare proxy's (its
// /debug/gomaxprocs) and the load generator's (this process). A process
// learns it from the CPUs it may run on (taskset) when it starts.
type hopProcs struct {
	Shape              string
	Hub, Proxy, Client int
	HubCPUs, ProxyCPUs string // the CPUs each may run on (taskset -c), "" for all
}

// hopVendorID is the vendor's id in the hub.
const hopVendorID = "conf"

// hopVendor says which vendor runs and how to start it.
type hopVendor struct {
	name string
	bin  string // conformance server; "" for the example vendor
	tool string
	args map[string]any
}

// hopVendorFor is the vendor of the hop bench: mcp-go's conformance server
// (bin, or built into dir from the module cache), else the example vendor
// weather-a, with a note saying so.
func hopVendorFor(ctx context.Context, bin, dir string) (hopVendor, string) {
	v := hopVendor{name: "mcp-go's conformance server (examples/conformance)", bin: bin,
		tool: "test_simple_text", args: map[string]any{}}
	if v.bin != "" {
		return v, ""
	}
	v.bin = filepath.Join(dir, "conformance-server")
	build := exec.CommandContext(ctx, "go", "build", "-o", v.bin, "github.com/mark3labs/mcp-go/examples/conformance")
	if out, err := build.CombinedOutput(); err != nil {
		note := fmt.Sprintf("mcp-go's conformance server could not be built here (%v: %s); the vendor is toolhub's example vendor weather-a instead, so the figures do not compare with runs against the conformance server",
			err, strings.TrimSpace(lastLine(string(out))))
		return hopVendor{name: "toolhub's example vendor weather-a (fallback)", tool: "current_weather", args: map[string]any{"city": "Paris"}}, note
	}
	return v, ""
}

func benchHop(ctx context.Context, o hopOptions) (*hopReport, error) {
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Binary = exe
	}
	if o.Protocol == "" {
		o.Protocol = mcp.ProtocolVersion20250326
	}
	if len(o.Concurrency) == 0 {
		o.Concurrency = []int{1, 16, 64}
	}
	if len(o.Shapes) == 0 {
		o.Shapes = []string{"shared", "pinned"}
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	for _, s := range o.Shapes {
		if s != "shared" && s != "pinned" {
			return nil, fmt.Errorf("bench: shape %q: want shared or pinned", s)
		}
	}
	dir, err := os.MkdirTemp("", "toolhub-bench-hop-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	rep := &hopReport{Protocol: o.Protocol, CPUs: runtime.NumCPU(), Duration: o.Duration, Warmup: o.Warmup, Rounds: o.Rounds,
		Endpoint: "/mcp/vendors/" + hopVendorID}
	v, note := hopVendorFor(ctx, o.VendorBin, dir)
	rep.Note = note
	rep.Vendor, rep.Tool = v.name, v.tool

	for _, shape := range o.Shapes {
		pinned := shape == "pinned"
		if pinned && rep.CPUs < 2 {
			rep.Note = strings.TrimSpace(rep.Note + " One CPU only: the pinned shape was skipped.")
			continue
		}
		rows, procs, upstream, err := hopShape(ctx, o, v, dir, pinned)
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", shape, err)
		}
		rep.Procs = append(rep.Procs, procs)
		rep.Rows = append(rep.Rows, rows...)
		rep.Upstream = upstream
	}
	if o.Sessions > 0 {
		m, err := hopSessions(ctx, o, v, dir)
		if err != nil {
			return nil, fmt.Errorf("bench: %d sessions: %w", o.Sessions, err)
		}
		rep.Memory = m
	}
	return rep, nil
}

// hopLab is the vendor, the proxy and the hub of one shape, each in its own
// process.
type hopLab struct {
	procs                     hopProcs
	vendor, proxy, hub        *child
	vendorURL, proxyURL       string
	hubBase, hubURL           string
	hubTool, upstreamRevision string
}

func (l *hopLab) close() {
	for _, c := range []*child{l.hub, l.proxy, l.vendor} {
		if c != nil {
			c.stop()
		}
	}
}

// startHopLab starts the vendor, (withProxy) the bare proxy and the hub. With
// pinned, the vendor runs on every CPU but the last and the proxy and hub on
// the last; each learns its GOMAXPROCS from that at start.
func startHopLab(ctx context.Context, o hopOptions, v hopVendor, dir string, pinned, withProxy bool) (l *hopLab, err error) {
	l = &hopLab{}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	var vendorCPUs, hopCPUs string
	if pinned {
		last := runtime.NumCPU() - 1
		vendorCPUs, hopCPUs = fmt.Sprintf("0-%d", last-1), strconv.Itoa(last)
	}
	vaddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if v.bin != "" {
		l.vendor, err = startChild("vendor", vendorCPUs, append(o.Env, "CONFORMANCE_ADDR="+vaddr), v.bin)
	} else {
		l.vendor, err = startChild("vendor", vendorCPUs, o.Env, o.Binary, "bench", "vendor", "--addr", vaddr)
	}
	if err != nil {
		return nil, err
	}
	if err := waitOK(ctx, l.vendor, "http://"+vaddr+"/health"); err != nil {
		return nil, err
	}
	l.vendorURL = "http://" + vaddr + "/mcp"

	if withProxy {
		paddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		if l.proxy, err = startChild("proxy", hopCPUs, o.Env, o.Binary, "bench", "proxy", "--addr", paddr, "--target", "http://"+vaddr); err != nil {
			return nil, err
		}
		if err := waitOK(ctx, l.proxy, "http://"+paddr+"/health"); err != nil {
			return nil, err
		}
		l.proxyURL = "http://" + paddr + "/mcp"
		if l.procs.Proxy, err = proxyProcs(ctx, "http://"+paddr); err != nil {
			return nil, err
		}
		l.procs.ProxyCPUs = hopCPUs
	}

	haddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	hubDir, err := os.MkdirTemp(dir, "hub-")
	if err != nil {
		return nil, err
	}
	// The sessions held open for the memory row are one key's (auth off).
	caps := max(o.Sessions+16, api.DefaultMaxSessions)
	cfg := fmt.Sprintf("addr: %s\ndata: %s\nlog_level: warn\noutbound: {allow: [%q]}\nmcp: {max_sessions_per_key: %d, max_sessions: %d}\nvendors:\n  - id: %s\n    mcp: {transport: http, url: %s}\n",
		haddr, filepath.Join(hubDir, "data"), vaddr, caps, caps, hopVendorID, l.vendorURL)
	cfgFile := filepath.Join(hubDir, "toolhub.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	if l.hub, err = startChild("toolhub", hopCPUs, append(slices.Clip(o.Env), o.HubEnv...), o.Binary, "serve", "--config", cfgFile); err != nil {
		return nil, err
	}
	l.hubBase = "http://" + haddr
	l.hubURL = l.hubBase + "/mcp/vendors/" + hopVendorID
	l.hubTool = v.tool
	if l.upstreamRevision, err = waitVendorReady(ctx, l.hub, l.hubBase, hopVendorID); err != nil {
		return nil, err
	}
	if l.procs.Hub, err = hubProcs(ctx, l.hubBase); err != nil {
		return nil, err
	}
	l.procs.HubCPUs = hopCPUs
	return l, nil
}

// hopShape measures every concurrency against the three paths in one
// shape.
func hopShape(ctx context.Context, o hopOptions, v hopVendor, dir string, pinned bool) ([]hopRow, hopProcs, string, error) {
	l, err := startHopLab(ctx, o, v, dir, pinned, true)
	if err != nil {
		return nil, hopProcs{}, "", err
	}
	defer l.close()
	shape := "shared"
	if pinned {
		shape = "pinned"
		// This process (the load generator) keeps every CPU but the last.
		ncpu := runtime.NumCPU()
		unpin, err := pinLoadGenerator(ncpu-1, ncpu)
		if err != nil {
			return nil, hopProcs{}, "", fmt.Errorf("pin the load generator: %w", err)
		}
		procs := runtime.GOMAXPROCS(ncpu - 1)
		defer func() {
			unpin()
			runtime.GOMAXPROCS(procs)
		}()
	}
	l.procs.Shape, l.procs.Client = shape, runtime.GOMAXPROCS(0)
	paths := []hopPath{
		{hopDirect, l.vendorURL, v.tool, nil},
		{hopProxy, l.proxyURL, v.tool, l.proxy},
		{hopHub, l.hubURL, l.hubTool, l.hub},
	}
	rounds := o.Rounds // ≥ 1: see benchHop
	var rows []hopRow
	for _, c := range o.Concurrency {
		res := make([][]loadgen.Result, len(paths))
		// CPU time over the measured phases of each path: the hop's, the
		// vendor's and the load generator's.
		cpu := make([][3]time.Duration, len(paths))
		for r := range rounds {
			for i, p := range paths {
				name := fmt.Sprintf("%s c=%d %s", shape, c, p.path)
				if rounds > 1 {
					name += fmt.Sprintf(" (round %d/%d)", r+1, rounds)
				}
				lo := loadgen.Options{URL: p.url, Tool: p.tool, Arguments: v.args, Concurrency: c,
					Duration: o.Duration / time.Duration(rounds), Warmup: o.Warmup, Protocol: o.Protocol, Progress: o.Progress}
				rr, used, err := p.measure(ctx, name, lo, l.vendor)
				if err != nil {
					return nil, hopProcs{}, "", err
				}
				res[i] = append(res[i], rr)
				for k := range cpu[i] {
					cpu[i][k] += used[k]
				}
			}
		}
		for i, p := range paths {
			rows = append(rows, p.row(shape, c, res[i], cpu[i]))
		}
	}
	return rows, l.procs, l.upstreamRevision, nil
}

// A hopPath is one of the paths the hop bench measures: a URL and tool,
// and the hop's process (nil for the direct path).
type hopPath struct {
	path, url, tool string
	proc            *child
}

// measure runs one phase of load lo on the path: its result and the CPU
// time the hop, the vendor and the load generator (this process) used over
// its measured part.
func (p hopPath) measure(ctx context.Context, name string, lo loadgen.Options, vendor *child) (loadgen.Result, [3]time.Duration, error) {
	pids := [3]int{0, vendor.pid(), os.Getpid()}
	if p.proc != nil {
		pids[0] = p.proc.pid()
	}
	var cpu0, cpu1 [3]time.Duration
	var cpuErr error
	read := func(into *[3]time.Duration) {
		for k, pid := range pids {
			if pid != 0 && cpuErr == nil {
				into[k], cpuErr = processCPU(pid)
			}
		}
	}
	lo.MeasureStart, lo.MeasureEnd = func() { read(&cpu0) }, func() { read(&cpu1) }
	rr, err := loadgen.Run(ctx, name, lo)
	if err != nil {
		return loadgen.Result{}, [3]time.Duration{}, err
	}
	if cpuErr != nil {
		return loadgen.Result{}, [3]time.Duration{}, cpuErr
	}
	var used [3]time.Duration
	for k := range used {
		used[k] = cpu1[k] - cpu0[k]
	}
	return rr, used, nil
}

// row is the table row of the path at concurrency c: its rounds' results
// merged, and the CPU per call of the hop, the vendor and the client.
func (p hopPath) row(shape string, c int, res []loadgen.Result, cpu [3]time.Duration) hopRow {
	row := hopRow{Shape: shape, C: c, Path: p.path, Res: loadgen.Merge(p.path, res...)}
	row.Res.Latencies = nil
	if n := time.Duration(row.Res.Calls + row.Res.Errors); n > 0 {
		if p.proc != nil {
			row.CPU = cpu[0]
			row.PerCall = row.CPU / n
		}
		row.VendorPerCall, row.ClientPerCall = cpu[1]/n, cpu[2]/n
	}
	return row
}

// hubProcs reads a hub's GOMAXPROCS from its /metrics.
func hubProcs(ctx context.Context, base string) (int, error) {
	b, err := getBody(ctx, base+"/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go_sched_gomaxprocs_threads "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("bench: %s/metrics: %q: %w", base, line, err)
			}
			return int(n), nil
		}
	}
	return 0, fmt.Errorf("bench: %s/metrics has no go_sched_gomaxprocs_threads", base)
}

// proxyProcs reads the bare proxy's GOMAXPROCS (`bench proxy` answers it
// at /debug/gomaxprocs).
func proxyProcs(ctx context.Context, base string) (int, error) {
	b, err := getBody(ctx, base+"/debug/gomaxprocs")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("bench: %s/debug/gomaxprocs: %q: %w", base, b, err)
	}
	return n, nil
}

func getBody(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bench: GET %s: %s", url, resp.Status)
	}
	return b, nil
}

// hopSessions starts a fresh vendor and hub (shared shape), opens one
// session with a call (so the hub has served one), reads the hub's RSS,
// opens o.Sessions sessions and holds them, and reads it again.
func hopSessions(ctx context.Context, o hopOptions, v hopVendor, dir string) (*hopMemory, error) {
	l, err := startHopLab(ctx, o, v, dir, false, false)
	if err != nil {
		return nil, err
	}
	defer l.close()
	m := &hopMemory{Sessions: o.Sessions, Protocol: o.Protocol, Endpoint: "/mcp/vendors/" + hopVendorID}
	if mcp.IsModernProtocol(m.Protocol) {
		m.Protocol = mcp.ProtocolVersion20250326
		m.Note = fmt.Sprintf("MCP %s has no sessions; they were held at %s", o.Protocol, m.Protocol)
	}
	ho := loadgen.HoldOptions{URL: l.hubURL, Protocol: m.Protocol, Tool: l.hubTool, Arguments: v.args, Sessions: 1}
	first, err := loadgen.Hold(ctx, ho)
	if err != nil {
		return nil, err
	}
	first.Close()
	if m.Before, _, err = processRSS(l.hub.pid()); err != nil {
		return nil, err
	}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "opening %d sessions against %s\n", o.Sessions, l.hubURL)
	}
	ho.Sessions = o.Sessions
	held, err := loadgen.Hold(ctx, ho)
	if err != nil {
		return nil, err
	}
	defer held.Close()
	if held.Sessions != o.Sessions {
		return nil, fmt.Errorf("%d of %d sessions open", held.Sessions, o.Sessions)
	}
	if m.After, m.Peak, err = processRSS(l.hub.pid()); err != nil {
		return nil, err
	}
	return m, nil
}

// processRSS is a process's resident memory now (VmRSS) and at its peak
// (VmHWM), in bytes, from /proc/<pid>/status.
func processRSS(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, val, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(val) // "12345 kB"
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("bench: /proc/%d/status: %s: unexpected format", pid, line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("bench: /proc/%d/status: %s: %w", pid, line, err)
		}
		if k == "VmRSS" {
			rss = n * 1024
		} else {
			hwm = n * 1024
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("bench: /proc/%d/status has no VmRSS", pid)
	}
	return rss, hwm, nil
}

// Markdown writes the report: a header, the table, the targets and the
// memory line.
func (r *hopReport) Markdown(w io.Writer) {
	r.markdownSetup(w)
	r.markdownTable(w)
	r.markdownTargets(w)
	if r.Memory != nil {
		r.Memory.markdown(w)
	}
}

// markdownSetup is the report's head: the vendor, the protocols, the
// phases, and each shape's GOMAXPROCS.
func (r *hopReport) markdownSetup(w io.Writer) {
	fmt.Fprintf(w, "Vendor: %s, tool `%s`; the load generator speaks MCP %s", r.Vendor, r.Tool, r.Protocol)
	if r.Upstream != "" {
		fmt.Fprintf(w, ", toolhub speaks %s to the vendor", r.Upstream)
	}
	if r.Rounds > 1 {
		fmt.Fprintf(w, ". %v per phase, measured in %d rounds taken turn about (direct, proxy, toolhub, direct, …), each after %v of warm-up; %d CPUs.\n",
			r.Duration, r.Rounds, r.Warmup, r.CPUs)
	} else {
		fmt.Fprintf(w, ". %v per phase after %v of warm-up; %d CPUs.\n", r.Duration, r.Warmup, r.CPUs)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "\n**Note:** %s\n", r.Note)
	}
	fmt.Fprintln(w)
	for _, p := range r.Procs {
		fmt.Fprintf(w, "- %s: GOMAXPROCS hub %d (CPUs %s), proxy %d (CPUs %s), load generator %d\n",
			p.Shape, p.Hub, cpuList(p.HubCPUs), p.Proxy, cpuList(p.ProxyCPUs), p.Client)
	}
	fmt.Fprintln(w)
}

// markdownTable is the table of every row, with its ratios to the bare
// proxy's row of the same shape and c.
func (r *hopReport) markdownTable(w io.Writer) {
	fmt.Fprintln(w, "| shape | c | path | calls/s | p50 µs | p99 µs | errors | hop CPU/call µs | vendor CPU/call µs | client CPU/call µs | calls/s ÷ proxy | p50 − proxy µs | CPU ÷ proxy |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, row := range r.Rows {
		proxy, ok := r.row(row.Shape, row.C, hopProxy)
		ratio, added, cpu := "—", "—", "—"
		if ok && proxy.Res.PerSec > 0 {
			ratio = fmt.Sprintf("%.2f×", row.Res.PerSec/proxy.Res.PerSec)
			added = fmt.Sprintf("%+d", (row.Res.P50 - proxy.Res.P50).Microseconds())
			if row.PerCall > 0 && proxy.PerCall > 0 {
				cpu = fmt.Sprintf("%.2f×", float64(row.PerCall)/float64(proxy.PerCall))
			}
		}
		perCall := "—"
		if row.Path != hopDirect {
			perCall = fmt.Sprintf("%.0f", micros(row.PerCall))
		}
		path := row.Path
		if path == hopHub {
			path = "toolhub `" + r.Endpoint + "`"
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.0f | %d | %d | %d | %s | %.0f | %.0f | %s | %s | %s |\n",
			row.Shape, row.C, path, row.Res.PerSec, row.Res.P50.Microseconds(), row.Res.P99.Microseconds(),
			row.Res.Errors, perCall, micros(row.VendorPerCall), micros(row.ClientPerCall), ratio, added, cpu)
	}
}

// markdownTargets is toolhub's rows held to their targets against the bare
// proxy.
func (r *hopReport) markdownTargets(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets (issue 30; toolhub against the bare proxy, same shape and c):")
	fmt.Fprintln(w)
	for _, row := range r.Rows {
		if row.Path != hopHub {
			continue
		}
		proxy, ok := r.row(row.Shape, row.C, hopProxy)
		if !ok || proxy.Res.PerSec == 0 {
			continue
		}
		for _, l := range hopTargets(row, proxy) {
			fmt.Fprintf(w, "- %s\n", l)
		}
	}
}

// markdown is the line of the sessions held open and the hub's memory,
// held to its target.
func (m *hopMemory) markdown(w io.Writer) {
	d := m.After - m.Before
	per1000 := float64(d) * 1000 / float64(m.Sessions)
	scaled := ""
	if m.Sessions != 1000 {
		scaled = fmt.Sprintf(", %.1f MB for 1,000 at that rate", per1000/1e6)
	}
	fmt.Fprintf(w, "- %d sessions held open against toolhub `%s` (MCP %s; each initialized, its GET stream open, one call made): hub RSS %.1f MB before, %.1f MB after (peak %.1f MB): %+.1f MB, %.1f KB per session%s (target ≤ 100 MB for 1,000): %s\n",
		m.Sessions, m.Endpoint, m.Protocol, mb(m.Before), mb(m.After), mb(m.Peak), mb(d), float64(d)/float64(m.Sessions)/1024, scaled,
		verdict(per1000 <= 100e6))
	if m.Note != "" {
		fmt.Fprintf(w, "  (%s)\n", m.Note)
	}
}

// hopTargets are the verdict lines of one toolhub row against the proxy's
// row of the same shape and c. The targets are issue 30's: at c=16, in
// both shapes, ≥ 1.00× the proxy's calls/s; pinned at c=16, hub CPU per
// call ≤ 1.00× the proxy's; at c=1, p50 ≤ +20 µs over the proxy's. Other
// rows (c=64, CPU per call but pinned c=16) show the figure against issue
// 13's older, looser target: calls/s ≥ 0.90×, CPU per call ≤ 1.20×.
func hopTargets(row, proxy hopRow) []string {
	var out []string
	x := row.Res.PerSec / proxy.Res.PerSec
	switch {
	case row.C == 16:
		out = append(out, fmt.Sprintf("%s, c=%d: calls/s %.2f× the proxy's (target ≥ 1.00×): %s", row.Shape, row.C, x, verdict(x >= 1.0)))
	case row.C > 16:
		out = append(out, fmt.Sprintf("%s, c=%d: calls/s %.2f× the proxy's (issue 13's target ≥ 0.90×): %s", row.Shape, row.C, x, verdict(x >= 0.9)))
	case row.C == 1:
		d := (row.Res.P50 - proxy.Res.P50).Microseconds()
		out = append(out, fmt.Sprintf("%s, c=%d: p50 %+d µs over the proxy's (target ≤ +20 µs): %s", row.Shape, row.C, d, verdict(d <= 20)))
	}
	if row.PerCall > 0 && proxy.PerCall > 0 {
		x := float64(row.PerCall) / float64(proxy.PerCall)
		if row.Shape == "pinned" && row.C == 16 {
			out = append(out, fmt.Sprintf("%s, c=%d: hub CPU per call %.2f× the proxy's (target ≤ 1.00×): %s", row.Shape, row.C, x, verdict(x <= 1.0)))
		} else {
			out = append(out, fmt.Sprintf("%s, c=%d: hub CPU per call %.2f× the proxy's (issue 13's target ≤ 1.20×): %s", row.Shape, row.C, x, verdict(x <= 1.2)))
		}
	}
	return out
}

func (r *hopReport) row(shape string, c int, path string) (hopRow, bool) {
	for _, row := range r.Rows {
		if row.Shape == shape && row.C == c && row.Path == path {
			return row, true
		}
	}
	return hopRow{}, false
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func mb(b int64) float64 { return float64(b) / 1e6 }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// parseInts parses a list like "1,16".
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bench: %q: want positive numbers separated by commas", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// benchProxy is the hidden `toolhub bench proxy`: a bare
// httputil.ReverseProxy in front of --target, in its own process like the
// hub, so the hop bench compares the two.
func benchProxy(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	target := fs.String("target", "", "base URL of the server to proxy to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("bench proxy: --target %q: want a base URL", *target)
	}
	// As deployed: keep-alive connections to the upstream for every
	// concurrent request (http.DefaultTransport keeps two idle per host).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	stopProfiles, err := startProfiles()
	if err != nil {
		return err
	}
	defer stopProfiles()
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: tr,
	}
	mux := http.NewServeMux()
	mux.Handle("/", rp)
	mux.HandleFunc("GET /debug/gomaxprocs", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, runtime.GOMAXPROCS(0))
	})
	return serveUntilDone(ctx, *addr, mux)
}

// benchExampleVendor is the hidden `toolhub bench vendor`: the example
// vendor weather-a over streamable HTTP at /mcp (and /health), in its own
// process; the hop bench's vendor when the conformance server cannot be
// built.
func benchExampleVendor(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench vendor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	h, stop, err := exampleVendorHandler()
	if err != nil {
		return err
	}
	defer stop()
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return serveUntilDone(ctx, *addr, mux)
}

func serveUntilDone(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// child is a process the hop bench started.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	out  *tail
}

// startChild runs argv (on cpus, a taskset list, if set) with env added.
func startChild(name, cpus string, env []string, argv ...string) (*child, error) {
	if cpus != "" {
		taskset, err := exec.LookPath("taskset")
		if err != nil {
			return nil, fmt.Errorf("pinning needs taskset (util-linux): %w", err)
		}
		argv = append([]string{taskset, "-c", cpus}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{}), out: out}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	return c, nil
}

// pid is the process's id (taskset execs the command, keeping it).
func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func (c *child) exited() error {
	return fmt.Errorf("%s exited: %v; its last output:\n%s", c.name, c.err, c.out.String())
}

// tail keeps the last 4 KiB a process wrote.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if n := len(t.b); n > 4096 {
		t.b = append(t.b[:0], t.b[n-4096:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// waitOK polls url until it answers 200, c exits, or 30s pass.
func waitOK(ctx context.Context, c *child, url string) error {
	return poll(ctx, c, 30*time.Second, func() (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("%s: %s", url, resp.Status)
	})
}

// waitVendorReady polls the hub's /v1/vendors until vendor is ready with
// tools, and returns the MCP revision the hub negotiated with it.
func waitVendorReady(ctx context.Context, c *child, base, vendor string) (string, error) {
	var revision string
	err := poll(ctx, c, 60*time.Second, func() (bool, error) {
		resp, err := http.Get(base + "/v1/vendors")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var vs struct {
			Vendors []struct {
				ID       string `json:"id"`
				State    string `json:"state"`
				Tools    int    `json:"tools"`
				Protocol string `json:"protocol"`
			} `json:"vendors"`
		}
		if err := json.NewDecoder(bytes.NewReader(b)).Decode(&vs); err != nil {
			return false, fmt.Errorf("/v1/vendors: %s: %v", resp.Status, err)
		}
		for _, v := range vs.Vendors {
			if v.ID == vendor && v.State == "ready" && v.Tools > 0 {
				revision = v.Protocol
				return true, nil
			}
		}
		return false, fmt.Errorf("vendor %s not ready: %s", vendor, b)
	})
	return revision, err
}

func poll(ctx context.Context, c *child, d time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		select {
		case <-c.done:
			return c.exited()
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %v: %v; its last output:\n%s", c.name, d, err, c.out.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond): // polling a condition
		}
	}
}

// freeAddr is a free loopback host:port (for processes that take an
// address rather than a listener).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// cpuList names a taskset CPU list, or all of them.
func cpuList(cpus string) string {
	if cpus == "" {
		return "all"
	}
	return cpus
}
