//go:build !unix

package jobs

import "time"

// cpuTime is not measured here: BenchmarkDrain's cpu-µs/job reads 0.
func cpuTime() time.Duration { return 0 }
