package ui

import (
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/toolhub/toolhub/hub"
)

// Series defaults: 10 s buckets, the last 60 of them (10 minutes).
const (
	DefaultBucket  = 10 * time.Second
	DefaultBuckets = 60
)

// Point is one bucket of one vendor's attempts.
type Point struct {
	T        int64   `json:"t"` // bucket start, Unix seconds
	Attempts int     `json:"attempts"`
	Errors   int     `json:"errors"` // attempts whose outcome is not "ok"
	MeanMS   float64 `json:"mean_ms"`
	MaxMS    float64 `json:"max_ms"`
}

// series keeps per-vendor attempt counts and latencies in time buckets,
// from the attempts of the decision-log lines.
type series struct {
	bucket time.Duration
	n      int

	mu      sync.Mutex
	vendors map[string]map[int64]*acc // vendor → bucket start → totals
}

type acc struct {
	attempts, errors int
	sumMS, maxMS     float64
}

func newSeries(bucket time.Duration, n int) *series {
	return &series{bucket: bucket, n: n, vendors: map[string]map[int64]*acc{}}
}

// observe adds the attempts of one decision-log record.
func (s *series) observe(rec slog.Record) {
	var attempts []hub.Attempt
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "attempts" {
			attempts, _ = a.Value.Any().([]hub.Attempt)
			return false
		}
		return true
	})
	if len(attempts) == 0 {
		return
	}
	b := rec.Time.Truncate(s.bucket).Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, at := range attempts {
		m := s.vendors[at.Vendor]
		if m == nil {
			m = map[int64]*acc{}
			s.vendors[at.Vendor] = m
		}
		x := m[b]
		if x == nil {
			x = &acc{}
			m[b] = x
			s.trim(m, b)
		}
		x.attempts++
		if at.Outcome != "ok" {
			x.errors++
		}
		x.sumMS += at.LatencyMS
		x.maxMS = max(x.maxMS, at.LatencyMS)
	}
}

// trim drops the buckets of m older than the window ending at newest.
func (s *series) trim(m map[int64]*acc, newest int64) {
	oldest := newest - int64(s.n-1)*int64(s.bucket/time.Second)
	for t := range m {
		if t < oldest {
			delete(m, t)
		}
	}
}

// window returns every vendor's points in the window ending at now, one
// per bucket, empty buckets included (so charts show gaps as zero).
func (s *series) window(now time.Time) map[string][]Point {
	step := int64(s.bucket / time.Second)
	last := now.Truncate(s.bucket).Unix()
	first := last - int64(s.n-1)*step
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]Point, len(s.vendors))
	for v, m := range s.vendors {
		pts := make([]Point, 0, s.n)
		any := false
		for t := first; t <= last; t += step {
			p := Point{T: t}
			if x := m[t]; x != nil {
				p.Attempts, p.Errors, p.MaxMS = x.attempts, x.errors, x.maxMS
				p.MeanMS = x.sumMS / float64(x.attempts)
				any = true
			}
			pts = append(pts, p)
		}
		if any {
			out[v] = pts
		}
	}
	return out
}

// Series returns each vendor's attempts, error counts and latencies per
// bucket over the window that ends at now (vendors with no attempt in it
// are left out), and the bucket's length.
func (r *Recorder) Series(now time.Time) (map[string][]Point, time.Duration) {
	return r.series.window(now), r.series.bucket
}

// vendorsOf lists the series' vendors, sorted (for tests and logs).
func vendorsOf(m map[string][]Point) []string {
	out := make([]string, 0, len(m))
	for v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}
