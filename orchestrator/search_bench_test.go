package orchestrator

import "testing"

// BenchmarkSearch is one query (the goals in turn) over the generated
// catalog of 1,000 vendors × 10 tools.
func BenchmarkSearch(b *testing.B) {
	p, c, _ := corpusPlanner(b, 1000)
	p.Search("default", "warm up", 5)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		p.Search("default", c.Goals[i%len(c.Goals)].Text, 5)
	}
}
