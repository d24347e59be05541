package main

import (
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
)

// startProfiles is hidden, for profiling the processes of `toolhub bench
// --hop` (the hub and the bare proxy): a CPU profile of the process's life
// written to $TOOLHUB_SERVE_CPUPROFILE, and an execution trace (scheduling
// latency: go tool trace -pprof=sched) to $TOOLHUB_SERVE_TRACE, and the
// heap's live objects when it stops to $TOOLHUB_SERVE_HEAPPROFILE, each with
// "." and the pid appended (the bench starts one hub per shape). stop ends
// them.
func startProfiles() (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range stops {
			f()
		}
	}
	for _, p := range []struct {
		env   string
		start func(io.Writer) error
		stop  func()
	}{
		{"TOOLHUB_SERVE_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile},
		{"TOOLHUB_SERVE_TRACE", trace.Start, trace.Stop},
		{"TOOLHUB_SERVE_HEAPPROFILE", nil, nil},
	} {
		path := os.Getenv(p.env)
		if path == "" {
			continue
		}
		f, err := os.Create(path + "." + strconv.Itoa(os.Getpid()))
		if err != nil {
			return stop, err
		}
		if p.start == nil { // the heap: written when the process stops
			stops = append(stops, func() {
				runtime.GC()
				pprof.WriteHeapProfile(f)
				f.Close()
			})
			continue
		}
		if err := p.start(f); err != nil {
			f.Close()
			return stop, err
		}
		stops = append(stops, func() { p.stop(); f.Close() })
	}
	return stop, nil
}
