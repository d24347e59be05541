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
// call: govern's decision log), served as JSON lines for the dashboard.
// Handlers derived with WithAttrs and WithGroup share the ring.
//
// A kept record is formatted when its line is read, not on the call path:
// keeping it is a clone of the record; formatting it (~5µs) would be
// paid by every call for lines that are read a few hundred at a time, when
// someone looks. Its values are read then, so a value changed after the
// record was logged shows its new state; govern logs each call's record
// once the call is over, and no one changes its values after that.
//
// A Recorder keeps Info lines even when the wrapped handler's level is
// higher: Enabled is true from Info up, and only records the wrapped
// handler enables reach it.
type Recorder struct {
	next   slog.Handler // nil: records are only kept
	json   slog.Handler // formats kept records into out
	out    *lineBuf     // where json writes; shared with the derived handlers
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
	out := &lineBuf{}
	// govern's handler writes what slog's JSON handler does, faster for decision lines.
	return &Recorder{next: next, json: govern.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}), out: out,
		ring: &ring{kept: make([]kept, n)}, series: newSeries(DefaultBucket, DefaultBuckets)}
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
		r.ring.keep(kept{h: r.json, rec: rec.Clone()})
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
func (r *Recorder) Lines(limit int) []json.RawMessage {
	recs := r.ring.newest(limit)
	out := make([]json.RawMessage, 0, len(recs))
	r.out.mu.Lock()
	defer r.out.mu.Unlock()
	for _, k := range recs {
		r.out.b = r.out.b[:0]
		_ = k.h.Handle(context.Background(), k.rec) // writes into r.out; cannot fail
		out = append(out, json.RawMessage(bytes.Clone(bytes.TrimRight(r.out.b, "\n"))))
	}
	return out
}

// Recorded is how many lines were kept since the start, including those
// that have left the ring since.
func (r *Recorder) Recorded() uint64 {
	r.ring.mu.Lock()
	defer r.ring.mu.Unlock()
	return r.ring.total
}

// lineBuf is what the Recorder's JSON handler writes into, one record per
// Write, while Lines holds mu.
type lineBuf struct {
	mu sync.Mutex
	b  []byte
}

var _ io.Writer = (*lineBuf)(nil)

func (l *lineBuf) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	return len(p), nil
}

// kept is a record and the handler that formats it (the Recorder's JSON
// handler with the attributes and groups of the logger that wrote it).
type kept struct {
	h   slog.Handler
	rec slog.Record
}

// ring holds the last len(kept) records kept.
type ring struct {
	mu    sync.Mutex
	kept  []kept
	next  int    // where the next record goes
	total uint64 // records kept since the start
}

func (g *ring) keep(k kept) {
	g.mu.Lock()
	g.kept[g.next] = k
	g.next = (g.next + 1) % len(g.kept)
	g.total++
	g.mu.Unlock()
}

func (g *ring) newest(limit int) []kept {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.kept)
	if g.total < uint64(n) {
		n = int(g.total)
	}
	if limit > 0 && limit < n {
		n = limit
	}
	out := make([]kept, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, g.kept[(g.next-i+len(g.kept))%len(g.kept)])
	}
	return out
}
