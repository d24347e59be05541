package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/internal/loadgen"
)

// The soak: the hop bench's vendor and hub (shared shape, each in its own
// process), first driven as hard as Concurrency clients go for the
// saturation, then held at Load of it for Duration, sampling the hub's
// RSS, its goroutines and the window's p99 every Every. A hub that leaks
// memory or goroutines shows it as a rising column.

// soakOptions configure [benchSoak]. Zero fields mean the defaults.
type soakOptions struct {
	Binary, VendorBin string
	Env               []string
	// Concurrency is the number of clients; default 16.
	Concurrency int
	// Load is the share of saturation offered; default 0.7.
	Load float64
	// Duration of the soak and Every sample; default 4m and 10s.
	Duration, Every time.Duration
	// Saturation is how long the saturation is measured; default 5s.
	Saturation time.Duration
	Progress   io.Writer
}

// soakSample is one sample of the soak.
type soakSample struct {
	At         time.Duration // since the soak began
	Res        loadgen.Result
	RSS        int64 // the hub's VmRSS, bytes
	Goroutines int   // the hub's go_goroutines
}

type soakReport struct {
	Vendor, Tool, Note string
	Concurrency        int
	Load               float64
	Saturation, Rate   float64
	Duration, Every    time.Duration
	Samples            []soakSample
	Total              loadgen.Result
}

func benchSoak(ctx context.Context, o soakOptions) (*soakReport, error) {
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Binary = exe
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Load <= 0 || o.Load > 1 {
		o.Load = 0.7
	}
	if o.Duration <= 0 {
		o.Duration = 4 * time.Minute
	}
	if o.Every <= 0 {
		o.Every = 10 * time.Second
	}
	if o.Saturation <= 0 {
		o.Saturation = 5 * time.Second
	}
	dir, err := os.MkdirTemp("", "toolhub-bench-soak-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	v, note := hopVendorFor(ctx, o.VendorBin, dir)
	rep := &soakReport{Vendor: v.name, Tool: v.tool, Note: note, Concurrency: o.Concurrency, Load: o.Load, Duration: o.Duration, Every: o.Every}
	ho := hopOptions{Binary: o.Binary, Env: o.Env, Protocol: mcp.ProtocolVersion20250326}
	l, err := startHopLab(ctx, ho, v, dir, false, false)
	if err != nil {
		return nil, err
	}
	defer l.close()
	lo := loadgen.Options{URL: l.hubURL, Tool: l.hubTool, Arguments: v.args, Concurrency: o.Concurrency,
		Duration: o.Saturation, Protocol: ho.Protocol, Progress: o.Progress}
	sat, err := loadgen.Run(ctx, "soak: saturation", lo)
	if err != nil {
		return nil, err
	}
	rep.Saturation, rep.Rate = sat.PerSec, sat.PerSec*o.Load
	pid := l.hub.pid()
	var sampleErr error
	start := time.Now()
	lo.Duration, lo.Rate, lo.Window = o.Duration, rep.Rate, o.Every
	lo.OnWindow = func(w loadgen.Result) {
		s := soakSample{At: time.Since(start), Res: w}
		var err error
		if s.RSS, _, err = processRSS(pid); err == nil {
			s.Goroutines, err = hubGoroutines(ctx, l.hubBase)
		}
		if err != nil && sampleErr == nil {
			sampleErr = err
		}
		rep.Samples = append(rep.Samples, s)
	}
	lo.MeasureStart = func() { start = time.Now() }
	total, err := loadgen.Run(ctx, fmt.Sprintf("soak: %.0f calls/s", rep.Rate), lo)
	if err != nil {
		return nil, err
	}
	if sampleErr != nil {
		return nil, sampleErr
	}
	total.Latencies = nil
	rep.Total = total
	return rep, nil
}

// hubGoroutines reads a hub's go_goroutines from its /metrics.
func hubGoroutines(ctx context.Context, base string) (int, error) {
	b, err := getBody(ctx, base+"/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("bench: %s/metrics: %q: %w", base, line, err)
			}
			return int(n), nil
		}
	}
	return 0, fmt.Errorf("bench: %s/metrics has no go_goroutines", base)
}

// Flat reports whether the soak's second half kept the first half's
// level: the hub's highest RSS in the second half within the larger of
// 10% and 8 MB of its highest in the first, its goroutines within the
// larger of 10% and 16. A leak raises
// the second half above the first.
func (r *soakReport) Flat() (rss, goroutines bool) {
	n := len(r.Samples)
	if n < 4 {
		return false, false
	}
	var rss1, rss2 int64
	var g1, g2 int
	for i, s := range r.Samples {
		if i < n/2 {
			rss1, g1 = max(rss1, s.RSS), max(g1, s.Goroutines)
		} else {
			rss2, g2 = max(rss2, s.RSS), max(g2, s.Goroutines)
		}
	}
	rss = rss2 <= rss1+max(rss1/10, 8<<20)
	goroutines = g2 <= g1+max(g1/10, 16)
	return rss, goroutines
}

// Markdown writes the soak's header, its samples and the verdict.
func (r *soakReport) Markdown(w io.Writer) {
	fmt.Fprintf(w, "Vendor: %s, tool `%s`, through toolhub `/mcp/vendors/%s` (hub and vendor each in its own process, on every CPU). ",
		r.Vendor, r.Tool, hopVendorID)
	fmt.Fprintf(w, "Saturation with %d clients: %.0f calls/s; the soak offers %.0f%% of it, %.0f calls/s, for %v, sampling every %v.\n",
		r.Concurrency, r.Saturation, 100*r.Load, r.Rate, r.Duration, r.Every)
	if r.Note != "" {
		fmt.Fprintf(w, "\n**Note:** %s\n", r.Note)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| t | calls/s | p50 µs | p99 µs | errors | hub RSS MB | hub goroutines |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range r.Samples {
		fmt.Fprintf(w, "| %v | %.0f | %d | %d | %d | %.1f | %d |\n", s.At.Round(time.Second), s.Res.PerSec,
			s.Res.P50.Microseconds(), s.Res.P99.Microseconds(), s.Res.Errors, mb(s.RSS), s.Goroutines)
	}
	fmt.Fprintln(w)
	rss, g := r.Flat()
	fmt.Fprintf(w, "Whole soak: %.0f calls/s, p50 %d µs, p99 %d µs, %d errors. ", r.Total.PerSec, r.Total.P50.Microseconds(), r.Total.P99.Microseconds(), r.Total.Errors)
	fmt.Fprintf(w, "Flat (the second half's highest sample within the larger of 10%% and 8 MB, or 16 goroutines, of the first half's): RSS %s, goroutines %s.\n", flatVerdict(rss), flatVerdict(g))
}

func flatVerdict(ok bool) string {
	if ok {
		return "flat"
	}
	return "**rising**"
}
