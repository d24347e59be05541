package limit

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkLocalAllow measures a decision on the in-process limiter, from all
// Ps at once, over 1024 keys (a realistic tenant × vendor spread).
func BenchmarkLocalAllow(b *testing.B) {
	l := NewLocal(nil)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "tenant-" + strconv.Itoa(i) + "/vendor"
	}
	rule := Rule{Rate: 1e6, Burst: 1000}
	ctx := context.Background()
	var seq atomic.Uint32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seq.Add(1)) * 7919
		for pb.Next() {
			i++
			if _, err := l.Allow(ctx, keys[i%len(keys)], rule, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
