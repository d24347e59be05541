package govern

import (
	"context"
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
		if x == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, s, true)
		}
		return append(b, ']')
	case []hub.Attempt:
		if x == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendAttempt(b, &x[i])
		}
		return append(b, ']')
	}
	panic("govern: appendValue: unexpected value kind") // flatValue let it through: a bug
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
