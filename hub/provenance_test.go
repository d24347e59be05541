package hub_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/toolhub/toolhub/hub"
)

// checkProvenanceJSON: AppendJSON writes json.Marshal's bytes, after what
// the buffer held, or reports false exactly where it cannot.
func checkProvenanceJSON(t *testing.T, p hub.Provenance) {
	t.Helper()
	want, err := json.Marshal(p)
	got, ok := p.AppendJSON([]byte("prefix"))
	if !ok {
		if err == nil && !hasHTML(p) {
			t.Errorf("AppendJSON refused %+v, which json.Marshal encodes as %s", p, want)
		}
		if string(got) != "prefix" {
			t.Errorf("AppendJSON refused but wrote %q", got)
		}
		return
	}
	if err != nil {
		t.Fatalf("AppendJSON wrote %s; json.Marshal fails: %v", got, err)
	}
	if string(got) != "prefix"+string(want) {
		t.Errorf("AppendJSON:   %s\njson.Marshal: prefix%s", got, want)
	}
}

// hasHTML reports whether a string of p holds what encoding/json escapes
// for HTML.
func hasHTML(p hub.Provenance) bool {
	for _, s := range []string{p.Vendor, p.Tool, p.Capability, p.JobID, p.CallID} {
		for _, c := range s {
			if c == '<' || c == '>' || c == '&' {
				return true
			}
		}
	}
	return false
}

func TestProvenanceAppendJSON(t *testing.T) {
	for _, p := range []hub.Provenance{
		{},
		{CallID: "0194a3b2c1d0e0f1a2b3c4d5e6f7a8b9", Vendor: "conf", Tool: "test_simple_text", Attempts: 1, LatencyMS: 0.412},
		{Tool: "t", Capability: "image.generate", Attempts: 3, LatencyMS: 1234.5, Cached: true, Stale: true, AgeSeconds: 86400.25,
			Fallback: true, Queued: true, JobID: "job-1", CallID: "c"},
		{Vendor: "v\"\\\n\u2028é\xff", LatencyMS: 1e-7, AgeSeconds: 1e21},
		{LatencyMS: -0.000001, AgeSeconds: 123456789012345678},
		{Vendor: "a<b", LatencyMS: 1},
		{CallID: "x&y"},
		{LatencyMS: math.NaN()},
		{AgeSeconds: math.Inf(1)},
	} {
		checkProvenanceJSON(t, p)
	}
}

func FuzzProvenanceAppendJSON(f *testing.F) {
	f.Add("conf", "tool", "cap", "job", "call", 1, 0.5, 2.0, uint8(0))
	f.Add("", "\xff<", "", "", "\u2028", -1, 1e-9, 1e300, uint8(15))
	f.Fuzz(func(t *testing.T, vendor, tool, capability, job, call string, attempts int, latency, age float64, flags uint8) {
		checkProvenanceJSON(t, hub.Provenance{Vendor: vendor, Tool: tool, Capability: capability, Attempts: attempts,
			LatencyMS: latency, Cached: flags&1 != 0, Stale: flags&2 != 0, AgeSeconds: age, Fallback: flags&4 != 0,
			Queued: flags&8 != 0, JobID: job, CallID: call})
	})
}

// BenchmarkProvenanceJSON: what the fast path's provenance costs per
// result, encoding/json against AppendJSON.
func BenchmarkProvenanceJSON(b *testing.B) {
	p := hub.Provenance{CallID: "0194a3b2c1d0e0f1a2b3c4d5e6f7a8b9", Vendor: "conf", Tool: "test_simple_text", Attempts: 1, LatencyMS: 0.412}
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 256)
		for b.Loop() {
			buf, _ = p.AppendJSON(buf[:0])
		}
	})
}
