package registry_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/x/cputime"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/toolcorpus"
)

// BenchmarkRegisterVendors registers 10, 100 and 1,000 generated vendors ×
// 10 tools one by one in an empty catalog (schemas compiled). Linear
// registration costs the same per vendor at every size: per-vendor-vs-10
// is the cost of one vendor against registering 10, measured in the same
// run (it was ~100× at 1,000 vendors when every add copied the catalog);
// cpu-µs/vendor is the process's CPU time per vendor (schema compiling is
// most of it).
func BenchmarkRegisterVendors(b *testing.B) {
	register := func(c *toolcorpus.Corpus) time.Duration {
		cat := registry.NewCatalog()
		s := time.Now()
		for _, v := range c.Vendors {
			if errs := cat.SetVendorTools(v.ID, v.Tools); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
		return time.Since(s)
	}
	small := toolcorpus.Generate(10, 1)
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("vendors=%d", n), func(b *testing.B) {
			c := toolcorpus.Generate(n, 1)
			var took, base, cpu time.Duration
			for b.Loop() {
				c0 := cputime.Process()
				took += register(c)
				cpu += cputime.Process() - c0
				b.StopTimer()
				base += register(small)
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*n), "cpu-µs/vendor")
			b.ReportMetric(float64(took.Microseconds())/float64(b.N*n), "µs/vendor")
			b.ReportMetric(float64(took)/float64(n)/(float64(base)/10), "per-vendor-vs-10")
		})
	}
}
