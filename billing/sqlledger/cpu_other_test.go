//go:build !unix

package sqlledger_test

import "time"

// cpuTime is not measured here: BenchmarkAppend reports no events/cpu-s.
func cpuTime() time.Duration { return 0 }
