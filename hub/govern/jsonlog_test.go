package govern_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/govern"
)

// TestJSONHandlerSameBytes: govern.NewJSONHandler writes what
// slog.NewJSONHandler writes, byte for byte, on its fast path (the
// decision log's flat records) and off it.
func TestJSONHandlerSameBytes(t *testing.T) {
	strs := []string{"", "weather-a", `quote " back \ slash`, "ctl \t\n\r\b\f\x00\x1f\x7f", "<html>&amp;", "héllo 世界 😀", "bad \xff\xfe utf8", "sep\u2028\u2029", "[redacted]"}
	floats := []float64{0, 1, 0.5, 12.345, 1e-7, 1e21, 123456789, -3.25, 1e-6, 5e-324, math.MaxFloat64, 1e20, 0.000123}
	var attempts []hub.Attempt
	for i, s := range strs {
		attempts = append(attempts, hub.Attempt{Vendor: s, Tool: strs[(i+1)%len(strs)], Outcome: hub.Outcome(s), LatencyMS: floats[i%len(floats)], Error: strs[(i+2)%len(strs)]})
	}
	at := time.Date(2026, 12, 3, 13, 4, 5, 120000000, time.UTC)
	rec := func(tm time.Time, level slog.Level, msg string, attrs ...slog.Attr) slog.Record {
		r := slog.NewRecord(tm, level, msg, 0)
		r.AddAttrs(attrs...)
		return r
	}
	records := []slog.Record{
		rec(at, slog.LevelInfo, "call",
			slog.String("call_id", "0123456789abcdef"), slog.String("tenant", "acme"), slog.String("tool", "weather-a__current"),
			slog.String("vendor", "weather-a"), slog.String("priority", "interactive"), slog.String("outcome", "ok"),
			slog.Any("attempts", attempts[:1]), slog.Any("decisions", []string{"breaker weather-a closed", "rate v:weather-a allowed"}),
			slog.Bool("fallback", false), slog.Bool("cached", false), slog.Bool("stale", false), slog.Bool("queued", false),
			slog.Float64("latency_ms", 0.123), slog.Int64("decision_us", 100)),
		rec(time.Time{}, slog.LevelWarn, "call", slog.Any("attempts", attempts), slog.Any("decisions", strs), slog.String("error", strs[3])),
		rec(at.In(time.FixedZone("X", 3600)), slog.LevelError+2, "m\"sg", slog.Any("attempts", []hub.Attempt(nil)), slog.Any("decisions", []string(nil)),
			slog.Any("empty", []string{}), slog.Uint64("u", math.MaxUint64), slog.Int("i", -7), slog.Duration("d", 1500*time.Millisecond), slog.Time("t", at)),
		// off the fast path
		rec(at, slog.LevelInfo, "call", slog.Any("arguments", map[string]any{"city": "Oslo"})),
		rec(at, slog.LevelInfo, "x", slog.Group("g", slog.String("a", "b")), slog.Any("err", errors.New("boom"))),
		rec(at, slog.LevelInfo, "x", slog.Float64("nan", math.NaN())),
		rec(at, slog.LevelInfo, "x", slog.Any("", nil), slog.String("k", "v")),
	}
	for _, f := range floats {
		records = append(records, rec(at, slog.LevelDebug-1, "f", slog.Float64("f", f), slog.Float64("neg", -f),
			slog.Any("attempts", []hub.Attempt{{LatencyMS: f}, {LatencyMS: -f}})))
	}
	for _, s := range strs {
		records = append(records, rec(at, slog.LevelInfo, s, slog.String(s+"k", s)))
	}
	for i, r := range records {
		var want, got bytes.Buffer
		std := slog.NewJSONHandler(&want, &slog.HandlerOptions{Level: slog.LevelDebug - 4})
		fast := govern.NewJSONHandler(&got, &slog.HandlerOptions{Level: slog.LevelDebug - 4})
		if err := std.Handle(context.Background(), r.Clone()); err != nil {
			t.Fatal(err)
		}
		if err := fast.Handle(context.Background(), r.Clone()); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("record %d:\n got %s\nwant %s", i, got.String(), want.String())
		}
		// Derived handlers too.
		want.Reset()
		got.Reset()
		std.WithAttrs([]slog.Attr{slog.String("a", "b")}).WithGroup("g").Handle(context.Background(), r.Clone())
		fast.WithAttrs([]slog.Attr{slog.String("a", "b")}).WithGroup("g").Handle(context.Background(), r.Clone())
		if got.String() != want.String() {
			t.Errorf("record %d, derived:\n got %s\nwant %s", i, got.String(), want.String())
		}
	}
	if govern.NewJSONHandler(&bytes.Buffer{}, nil).Enabled(context.Background(), slog.LevelDebug) {
		t.Error("nil options: debug enabled, want info and up as slog's")
	}
}
