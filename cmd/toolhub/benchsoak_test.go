package main

import (
	"testing"
	"time"
)

// TestSoakFlat: a soak is flat when its second half stays at the first
// half's level (within the larger of 10% and 8 MB, or 16 goroutines), and
// rising when either grows past it; too few samples say nothing.
func TestSoakFlat(t *testing.T) {
	const mib = 1 << 20
	samples := func(rss []int64, g []int) []soakSample {
		var out []soakSample
		for i := range rss {
			out = append(out, soakSample{At: time.Duration(i+1) * 10 * time.Second, RSS: rss[i] * mib, Goroutines: g[i]})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		rss     []int64
		g       []int
		rssFlat bool
		gFlat   bool
	}{
		{"flat", []int64{90, 92, 91, 93, 92, 91}, []int{60, 70, 65, 68, 71, 66}, true, true},
		{"memory grows", []int64{90, 100, 110, 120, 130, 140}, []int{60, 60, 60, 60, 60, 60}, false, true},
		{"goroutines grow", []int64{90, 90, 90, 90, 90, 90}, []int{60, 100, 140, 180, 220, 260}, true, false},
		{"too few samples", []int64{90, 90, 90}, []int{60, 60, 60}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &soakReport{Samples: samples(tc.rss, tc.g)}
			rss, g := r.Flat()
			if rss != tc.rssFlat || g != tc.gFlat {
				t.Errorf("Flat() = %v, %v; want %v, %v", rss, g, tc.rssFlat, tc.gFlat)
			}
		})
	}
}
