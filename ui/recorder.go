package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"

	"github.com/toolhub/toolhub/hub/govern"
)

// DefaultDecisions is how many decision-log lines a [Recorder] keeps by
// default.
const DefaultDecisions = 200

// DecisionMessage is the message of govern's decision-log lines, the only
// records a [Recorder] keeps.
const DecisionMessage = "call"

// Recorder is an [slog.Handler] that passes every record on to the handler
// it wraps and keeps the last N records whose message is "call" (one per
// call: govern's decision log) as JSON lines in a ring buffer, for the
// dashboard. Handlers derived with WithAttrs and WithGroup share the ring.
//
// A Recorder keeps Info lines even when the wrapped handler's level is
// higher: Enabled is true from Info up, and only records the wrapped
// handler enables reach it.
type Recorder struct {
	next   slog.Handler // nil: records are only kept
	json   slog.Handler // formats kept records into ring
	ring   *ring
	series *series // per-vendor attempts over time (series.go)
}

var _ slog.Handler = (*Recorder)(nil)

// NewRecorder wraps next (nil: keep lines without passing them on) and
// keeps the last n "call" lines (n <= 0: [DefaultDecisions]).
func NewRecorder(next slog.Handler, n int) *Recorder {
	if n <= 0 {
		n = DefaultDecisions
	}
	rg := &ring{lines: make([][]byte, n)}
	// govern's handler writes what slog's JSON handler does, faster for decision lines.
	return &Recorder{next: next, json: govern.NewJSONHandler(rg, &slog.HandlerOptions{Level: slog.LevelDebug}), ring: rg,
		series: newSeries(DefaultBucket, DefaultBuckets)}
}

// Enabled reports whether the wrapped handler takes level, or level is
// Info or above (decision lines are Info and Warn).
func (r *Recorder) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo || r.next != nil && r.next.Enabled(ctx, level)
}

// Handle keeps rec when it is a decision line and passes it on to the
// wrapped handler when that handler takes its level.
func (r *Recorder) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Message == DecisionMessage {
		_ = r.json.Handle(ctx, rec) // writes into the ring; cannot fail
		r.series.observe(rec)
	}
	if r.next != nil && r.next.Enabled(ctx, rec.Level) {
		return r.next.Handle(ctx, rec)
	}
	return nil
}

// WithAttrs returns a Recorder whose records carry attrs, sharing the ring.
func (r *Recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *r
	c.json = r.json.WithAttrs(attrs)
	if r.next != nil {
		c.next = r.next.WithAttrs(attrs)
	}
	return &c
}

// WithGroup returns a Recorder whose attributes go in group, sharing the
// ring.
func (r *Recorder) WithGroup(name string) slog.Handler {
	c := *r
	c.json = r.json.WithGroup(name)
	if r.next != nil {
		c.next = r.next.WithGroup(name)
	}
	return &c
}

// Lines returns the kept lines, newest first, at most limit (limit <= 0:
// all of them).
func (r *Recorder) Lines(limit int) []json.RawMessage { return r.ring.newest(limit) }

// Recorded is how many lines were kept since the start, including those
// that have left the ring since.
func (r *Recorder) Recorded() uint64 {
	r.ring.mu.Lock()
	defer r.ring.mu.Unlock()
	return r.ring.total
}

// ring holds the last len(lines) JSON lines written to it.
type ring struct {
	mu    sync.Mutex
	lines [][]byte
	next  int    // where the next line goes
	total uint64 // lines written since the start
}

var _ io.Writer = (*ring)(nil)

// Write keeps one line (slog's JSON handler writes one record per Write).
func (g *ring) Write(p []byte) (int, error) {
	line := bytes.Clone(bytes.TrimRight(p, "\n"))
	g.mu.Lock()
	g.lines[g.next] = line
	g.next = (g.next + 1) % len(g.lines)
	g.total++
	g.mu.Unlock()
	return len(p), nil
}

func (g *ring) newest(limit int) []json.RawMessage {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.lines)
	if g.total < uint64(n) {
		n = int(g.total)
	}
	if limit > 0 && limit < n {
		n = limit
	}
	out := make([]json.RawMessage, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, json.RawMessage(g.lines[(g.next-i+len(g.lines))%len(g.lines)]))
	}
	return out
}
