package main

import (
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
)

// startProfiles is hidden, for profiling the processes of `toolhub bench
// --hop` (the hub and the bare proxy): a CPU profile of the process's life
// written to $TOOLHUB_SERVE_CPUPROFILE, and an execution trace (scheduling
// latency: go tool trace -pprof=sched) to $TOOLHUB_SERVE_TRACE, each with
// "." and the pid appended (the bench starts one hub per shape). stop ends
// them.
func startProfiles() (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range stops {
			f()
		}
	}
	if p := os.Getenv("TOOLHUB_SERVE_CPUPROFILE"); p != "" {
		f, err := os.Create(p + "." + strconv.Itoa(os.Getpid()))
		if err != nil {
			return stop, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return stop, err
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if p := os.Getenv("TOOLHUB_SERVE_TRACE"); p != "" {
		f, err := os.Create(p + "." + strconv.Itoa(os.Getpid()))
		if err != nil {
			return stop, err
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return stop, err
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return stop, nil
}
