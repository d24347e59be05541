package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhub/toolhub/internal/loadgen"
)

// benchSplit measures the hub as it runs in production: in its own process,
// and with pin on its own CPU, while the load generator and the vendor share
// the other CPUs. The in-process bench puts all three on the same cores, so
// the hub's throughput there is bounded by the CPU it takes from the load
// generator and the vendor; here the ratio says how many calls one hub core
// passes compared with what the client and vendor manage directly, and the
// hub's own CPU time per call (from /proc) is the capacity-planning figure.
func benchSplit(ctx context.Context, conc int, dur time.Duration, pin bool, stdout, stderr io.Writer) error {
	ncpu := runtime.NumCPU()
	if pin && ncpu < 2 {
		fmt.Fprintln(stderr, "bench: one CPU only: not pinning")
		pin = false
	}
	hubCPU := ncpu - 1
	if pin {
		unpin, err := pinLoadGenerator(hubCPU, ncpu)
		if err != nil {
			return fmt.Errorf("bench: pin the load generator: %w", err)
		}
		defer unpin()
	}

	vendorURL, vendorAddr, stopVendor, err := benchVendor()
	if err != nil {
		return err
	}
	defer stopVendor()
	data, err := os.MkdirTemp("", "toolhub-bench-split-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(data)
	hubCPUArg := -1
	if pin {
		hubCPUArg = hubCPU
	}
	hubAddr, cmd, err := startSplitHub(ctx, data, vendorURL, vendorAddr, hubCPUArg)
	if err != nil {
		return err
	}
	defer stopSplitHub(cmd)
	if err := waitHubTool(ctx, "http://"+hubAddr, "weather-a__current_weather"); err != nil {
		return err
	}

	where := "shared CPUs"
	if pin {
		where = fmt.Sprintf("hub pinned to CPU %d, load generator and vendor on CPUs 0-%d", hubCPU, hubCPU-1)
	}
	fmt.Fprintf(stdout, "HTTP load, hub in its own process (%s): weather-a/current_weather, %d clients, %v per phase\n", where, conc, dur)
	o := loadgen.Options{Tool: "current_weather", Arguments: map[string]any{"city": "Paris"}, Concurrency: conc, Duration: dur, Progress: stderr}
	o.URL = vendorURL
	direct, err := loadgen.Run(ctx, "direct to vendor", o)
	if err != nil {
		return err
	}
	o.URL, o.Tool = "http://"+hubAddr+"/mcp", "weather-a__current_weather"
	cpu0, err := processCPU(cmd.Process.Pid)
	if err != nil {
		return err
	}
	through, err := loadgen.Run(ctx, "through toolhub /mcp", o)
	if err != nil {
		return err
	}
	cpu1, err := processCPU(cmd.Process.Pid)
	if err != nil {
		return err
	}
	printThrough(stdout, direct, through)
	// The hub's CPU covers the warm-up second too, so divide by every call
	// made in the phase, measured or not: PerSec × (warm-up + elapsed).
	calls := through.PerSec * (time.Second + through.Elapsed).Seconds()
	if calls > 0 {
		fmt.Fprintf(stdout, "hub CPU per call: %.0f µs (user+system, %.2f CPU-seconds over ~%.0f calls)\n",
			(cpu1-cpu0).Seconds()*1e6/calls, (cpu1 - cpu0).Seconds(), calls)
	}
	return nil
}

// pinLoadGenerator keeps this process (load generator and vendor) on every
// CPU but the last, hubCPU, which the hub gets; unpin gives it all ncpu
// back.
func pinLoadGenerator(hubCPU, ncpu int) (unpin func(), err error) {
	var set unix.CPUSet
	for c := range hubCPU {
		set.Set(c)
	}
	if err := pinThreads(&set); err != nil {
		return nil, err
	}
	return func() {
		var all unix.CPUSet
		for c := range ncpu {
			all.Set(c)
		}
		_ = pinThreads(&all)
	}, nil
}

// startSplitHub starts "toolhub serve" in its own process, its config and
// data in dir, with weather-a at vendorURL, pinned to hubCPU unless that
// is negative: the hub's host:port and its command.
func startSplitHub(ctx context.Context, dir, vendorURL, vendorAddr string, hubCPU int) (string, *exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	hln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hubAddr := hln.Addr().String()
	hln.Close()
	cfg := fmt.Sprintf("addr: %s\ndata: %s\noutbound: {allow: [%q]}\nvendors:\n  - id: weather-a\n    mcp: {transport: http, url: %s}\n",
		hubAddr, filepath.Join(dir, "hub"), vendorAddr, vendorURL)
	cfgFile := filepath.Join(dir, "toolhub.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		return "", nil, err
	}
	args := []string{exe, "serve", "--config", cfgFile}
	if hubCPU >= 0 {
		taskset, err := exec.LookPath("taskset")
		if err != nil {
			return "", nil, fmt.Errorf("bench: --pin needs taskset (util-linux): %w", err)
		}
		args = append([]string{taskset, "-c", strconv.Itoa(hubCPU)}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	return hubAddr, cmd, nil
}

// stopSplitHub interrupts the hub and waits for it, killing it after 5s.
func stopSplitHub(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// pinThreads sets the CPU affinity of every thread of this process; threads
// started later inherit it from the thread that starts them.
func pinThreads(set *unix.CPUSet) error {
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tids {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return err
		}
	}
	return nil
}

// processCPU is the user+system CPU time a process has used, from /proc.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command (which is in parentheses and may hold spaces).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: unexpected format", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench: /proc/%d/stat: unexpected format", pid)
	}
	const ticks = 100 // USER_HZ: 100 on every Linux this runs on
	return time.Duration(utime+stime) * time.Second / ticks, nil
}

// waitHubTool waits until the hub at base answers and lists tool.
func waitHubTool(ctx context.Context, base, tool string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := http.Get(base + "/v1/tools")
		if err == nil {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode == http.StatusOK && strings.Contains(string(b), tool) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the hub at %s did not list %s within 20s (last error: %v)", base, tool, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
