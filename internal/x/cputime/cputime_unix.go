//go:build unix

// Package cputime reads the CPU time this process has used, for
// benchmarks and drills on a shared machine: it measures the work where
// wall time measures the neighbours too.
package cputime

import (
	"syscall"
	"time"
)

// Process is the user and system CPU time this process has used so far.
func Process() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
