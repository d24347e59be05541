package govern

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/x/jsonenc"
)

// NewJSONHandler returns a [slog.Handler] that writes exactly what
// [slog.NewJSONHandler](w, opts) writes, byte for byte, and writes the
// decision log's records (flat records of strings, numbers, booleans,
// times, durations, []string and []hub.Attempt) without its reflection:
// the stdlib handler encodes every float, []string and []hub.Attempt
// with a json.Encoder of its own, which made the decision log the larger
// part of a governed call's cost. Lines are appended into a pooled buffer
// and written with one Write.
//
// Records with anything else (groups, other values, LogValuers, NaN) and
// handlers with AddSource, ReplaceAttr, WithAttrs or WithGroup are written
// by the stdlib handler itself, through the same lock.
func NewJSONHandler(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	var o slog.HandlerOptions
	if opts != nil {
		o = *opts
	}
	lw := &lockedWriter{w: w}
	std := slog.NewJSONHandler(lw, &o)
	if o.AddSource || o.ReplaceAttr != nil {
		return std
	}
	return &jsonHandler{lw: lw, std: std, level: o.Level}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type jsonHandler struct {
	lw    *lockedWriter
	std   slog.Handler
	level slog.Leveler
}

func (h *jsonHandler) Enabled(_ context.Context, l slog.Level) bool {
	min := slog.LevelInfo
	if h.level != nil {
		min = h.level.Level()
	}
	return l >= min
}

func (h *jsonHandler) WithAttrs(as []slog.Attr) slog.Handler { return h.std.WithAttrs(as) }
func (h *jsonHandler) WithGroup(name string) slog.Handler    { return h.std.WithGroup(name) }

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (h *jsonHandler) Handle(ctx context.Context, r slog.Record) error {
	if y := r.Time.Year(); !r.Time.IsZero() && (y < 0 || y >= 10000) {
		return h.std.Handle(ctx, r)
	}
	bp := linePool.Get().(*[]byte)
	b := append((*bp)[:0], '{')
	if !r.Time.IsZero() {
		b = append(b, `"time":"`...)
		b = r.Time.Round(0).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = jsonenc.AppendString(b, r.Level.String(), false)
	b = append(b, `,"msg":`...)
	b = jsonenc.AppendString(b, r.Message, false)
	flat := true
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "" || !flatValue(a.Value) {
			flat = false
			return false
		}
		b = append(b, ',')
		b = jsonenc.AppendString(b, a.Key, false)
		b = append(b, ':')
		b = appendValue(b, a.Value)
		return true
	})
	var err error
	if flat {
		b = append(b, '}', '\n')
		_, err = h.lw.Write(b)
	}
	if cap(b) <= 64<<10 {
		*bp = b
		linePool.Put(bp)
	}
	if !flat {
		return h.std.Handle(ctx, r)
	}
	return err
}

// flatValue reports whether appendValue writes v as the stdlib handler
// does.
func flatValue(v slog.Value) bool {
	switch v.Kind() {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration:
		return true
	case slog.KindFloat64:
		return finite(v.Float64())
	case slog.KindTime:
		y := v.Time().Year()
		return y >= 0 && y < 10000
	case slog.KindAny:
		switch x := v.Any().(type) {
		case []string:
			return true
		case []hub.Attempt:
			for i := range x {
				if !finite(x[i].LatencyMS) {
					return false
				}
			}
			return true
		}
	}
	return false
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

func appendValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return jsonenc.AppendString(b, v.String(), false)
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		return appendJSONFloat(b, v.Float64())
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10)
	case slog.KindTime:
		b = append(b, '"')
		b = v.Time().AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	switch x := v.Any().(type) {
	case []string:
		return appendStrings(b, x)
	case []hub.Attempt:
		return appendAttempts(b, x)
	}
	panic("govern: appendValue: unexpected value kind") // flatValue let it through: a bug
}

// appendStrings writes ss as encoding/json does.
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, s, true)
	}
	return append(b, ']')
}

// appendAttempts writes as as encoding/json does (its latencies finite).
func appendAttempts(b []byte, as []hub.Attempt) []byte {
	if as == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range as {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendAttempt(b, &as[i])
	}
	return append(b, ']')
}

// appendAttempt writes a as encoding/json does (hub.Attempt's tags).
func appendAttempt(b []byte, a *hub.Attempt) []byte {
	b = append(b, `{"vendor":`...)
	b = jsonenc.AppendString(b, a.Vendor, true)
	b = append(b, `,"tool":`...)
	b = jsonenc.AppendString(b, a.Tool, true)
	b = append(b, `,"outcome":`...)
	b = jsonenc.AppendString(b, string(a.Outcome), true)
	b = append(b, `,"latency_ms":`...)
	b = appendJSONFloat(b, a.LatencyMS)
	if a.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonenc.AppendString(b, a.Error, true)
	}
	return append(b, '}')
}

// appendJSONFloat appends a finite f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendLine appends the line the JSON handler writes for l.record(), or
// returns b and false when that line is not on the handler's fast path
// (findings, debug arguments, a latency that is not finite, a time
// outside years 0-9999): then the handler must write it.
func appendLine(b []byte, l *callLine) ([]byte, bool) {
	if y := l.time.Year(); l.debug || len(l.findings) > 0 || y < 0 || y >= 10000 {
		return b, false
	}
	for i := range l.attempts {
		if !finite(l.attempts[i].LatencyMS) {
			return b, false
		}
	}
	b = append(b, `{"time":"`...)
	b = l.time.Round(0).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":`...)
	b = jsonenc.AppendString(b, l.level.String(), false)
	b = append(b, `,"msg":"call","call_id":`...)
	b = jsonenc.AppendString(b, l.callID, false)
	b = append(b, `,"tenant":`...)
	b = jsonenc.AppendString(b, l.tenant, false)
	b = append(b, `,"tool":`...)
	b = jsonenc.AppendString(b, l.tool, false)
	if l.capability != "" {
		b = append(b, `,"capability":`...)
		b = jsonenc.AppendString(b, l.capability, false)
	}
	if l.traced {
		b = append(b, `,"trace_id":"`...)
		b = hex.AppendEncode(b, l.traceID[:])
		b = append(b, `","span_id":"`...)
		b = hex.AppendEncode(b, l.spanID[:])
		b = append(b, '"')
	}
	if l.planID != "" {
		b = append(b, `,"plan_id":`...)
		b = jsonenc.AppendString(b, l.planID, false)
	}
	b = append(b, `,"vendor":`...)
	b = jsonenc.AppendString(b, l.vendor, false)
	b = append(b, `,"priority":`...)
	b = jsonenc.AppendString(b, l.priority.String(), false)
	b = append(b, `,"outcome":`...)
	b = jsonenc.AppendString(b, string(l.outcome), false)
	b = append(b, `,"attempts":`...)
	b = appendAttempts(b, l.attempts)
	b = append(b, `,"decisions":`...)
	b = appendStrings(b, l.decisions)
	if l.failed {
		b = append(b, `,"code":`...)
		b = jsonenc.AppendString(b, string(l.code), false)
		b = append(b, `,"error":`...)
		b = jsonenc.AppendString(b, l.errMsg, false)
	}
	b = append(b, `,"fallback":`...)
	b = strconv.AppendBool(b, l.fallback)
	b = append(b, `,"cached":`...)
	b = strconv.AppendBool(b, l.cached)
	b = append(b, `,"stale":`...)
	b = strconv.AppendBool(b, l.stale)
	b = append(b, `,"queued":`...)
	b = strconv.AppendBool(b, l.queued)
	b = append(b, `,"latency_ms":`...)
	b = appendJSONFloat(b, float64(l.total.Microseconds())/1000)
	b = append(b, `,"decision_us":`...)
	b = strconv.AppendInt(b, l.decisionUS, 10)
	return append(b, '}', '\n'), true
}
