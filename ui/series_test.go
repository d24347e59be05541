package ui

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/hub"
)

func TestSeriesBucketsAttemptsPerVendor(t *testing.T) {
	rec := NewRecorder(nil, 0)
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	log := func(at time.Time, attempts ...hub.Attempt) {
		r := slog.NewRecord(at, slog.LevelInfo, DecisionMessage, 0)
		r.AddAttrs(slog.String("tool", "weather.current"), slog.Any("attempts", attempts))
		if err := rec.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	// A call that fell back from weather-a to weather-b, then two fine ones.
	log(t0.Add(1*time.Second), hub.Attempt{Vendor: "weather-a", Outcome: "timeout", LatencyMS: 100}, hub.Attempt{Vendor: "weather-b", Outcome: "ok", LatencyMS: 20})
	log(t0.Add(5*time.Second), hub.Attempt{Vendor: "weather-a", Outcome: "ok", LatencyMS: 30})
	log(t0.Add(12*time.Second), hub.Attempt{Vendor: "weather-a", Outcome: "ok", LatencyMS: 10})
	// Too old for the window at the end: left out.
	log(t0.Add(-20*time.Minute), hub.Attempt{Vendor: "old", Outcome: "ok", LatencyMS: 1})
	// A line that is not a decision is not counted.
	other := slog.NewRecord(t0, slog.LevelInfo, "vendor ready", 0)
	other.AddAttrs(slog.Any("attempts", []hub.Attempt{{Vendor: "weather-a", Outcome: "ok"}}))
	_ = rec.Handle(context.Background(), other)

	got, bucket := rec.Series(t0.Add(15 * time.Second))
	if bucket != DefaultBucket {
		t.Fatalf("bucket %v", bucket)
	}
	if d := cmp.Diff([]string{"weather-a", "weather-b"}, vendorsOf(got)); d != "" {
		t.Fatalf("vendors (-want +got):\n%s", d)
	}
	a := got["weather-a"]
	if len(a) != DefaultBuckets {
		t.Fatalf("%d points, want %d (one per bucket)", len(a), DefaultBuckets)
	}
	last2 := a[len(a)-2:]
	want := []Point{
		{T: t0.Unix(), Attempts: 2, Errors: 1, MeanMS: 65, MaxMS: 100},
		{T: t0.Add(10 * time.Second).Unix(), Attempts: 1, MeanMS: 10, MaxMS: 10},
	}
	if d := cmp.Diff(want, last2); d != "" {
		t.Errorf("weather-a's last buckets (-want +got):\n%s", d)
	}
	if a[0].Attempts != 0 || a[0].T != t0.Add(10*time.Second).Unix()-int64(DefaultBuckets-1)*10 {
		t.Errorf("first bucket %+v", a[0])
	}
}

// BenchmarkRecorderKeep is what the dashboard's recorder costs a call: one
// decision line, as govern logs it, kept in the ring.
func BenchmarkRecorderKeep(b *testing.B) {
	rec := NewRecorder(nil, 0)
	log := slog.New(rec).With("component", "govern")
	attempts := []hub.Attempt{{Vendor: "weather-a", Tool: "current_weather", Outcome: hub.OutcomeOK, LatencyMS: 0.4}}
	decisions := []string{"rate weather-a allowed", "breaker weather-a closed"}
	for b.Loop() {
		r := slog.NewRecord(time.Now(), slog.LevelInfo, DecisionMessage, 0)
		r.AddAttrs(slog.String("call_id", "01a23dbce03809323343e974830ee470"), slog.String("tenant", "acme"), slog.String("tool", "weather.current"),
			slog.String("vendor", "weather-a"), slog.String("priority", "normal"), slog.String("outcome", "ok"),
			slog.Any("attempts", attempts), slog.Any("decisions", decisions), slog.Bool("fallback", false), slog.Bool("cached", false),
			slog.Bool("stale", false), slog.Bool("queued", false), slog.Float64("latency_ms", 0.512), slog.Int64("decision_us", 41))
		_ = log.Handler().Handle(context.Background(), r)
	}
}
