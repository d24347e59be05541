package billing

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestAppendLineMatchesEncodingJSON checks the hand-written encoder against
// encoding/json: a line decodes to the event, and its JSON equals
// json.Marshal's as values.
func TestAppendLineMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 17, 4, 5, 123456789, time.FixedZone("x", 3600))
	tests := []struct {
		name string
		ev   Event
	}{
		{"zero", Event{}},
		{"attempt", Event{Key: "c1/2", CallID: "c1", Kind: KindAttempt, Attempt: 2, Time: at, Ingested: at.UTC(),
			Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Capability: "image.generate", Outcome: OutcomeUnknown,
			Reason: "a \"quoted\"\n\treason \\ \x01 <html> & \u2028 é 中", Latency: 3 * time.Millisecond,
			Units: Units{"calls": 1, "images": 4}, VendorUnitPrice: 10, VendorCost: -20, Currency: "USD", PriceVersion: "2026-12"}},
		{"invalid utf-8", Event{Key: "k\xff\xfe", Tenant: "t\xc3", Units: Units{}, Adjusts: "k0"}},
		{"merged call", Event{Key: "c1/call", CallID: "c1", Kind: KindCall, Attempt: 1, Time: at, Ingested: at.UTC(),
			Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Outcome: OutcomeOK, Latency: 3 * time.Millisecond,
			Units: Units{"calls": 1}, TenantUnitPrice: 5, TenantCost: 5, VendorUnitPrice: 2, VendorCost: 2, Currency: "USD",
			AttemptLatency: 2 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := appendLine(nil, &tt.ev)
			got, ok := decodeLine(line)
			if !ok {
				t.Fatalf("line does not decode: %s", line)
			}
			b, err := json.Marshal(&tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			var want Event
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decoded line (-encoding/json +appendLine):\n%s", diff)
			}
			var a, c any
			json.Unmarshal(b, &a)
			json.Unmarshal(line[9:len(line)-1], &c)
			if diff := cmp.Diff(a, c); diff != "" {
				t.Errorf("JSON values (-encoding/json +appendLine):\n%s", diff)
			}
		})
	}
}

// checkDecodes: line decodes to what encoding/json makes of ev (invalid
// UTF-8 in its strings becomes U+FFFD).
func checkDecodes(t *testing.T, line []byte, ev Event) {
	t.Helper()
	got, ok := decodeLine(line)
	if !ok {
		t.Fatalf("line does not decode: %s", line)
	}
	b, _ := json.Marshal(&ev)
	var want Event
	json.Unmarshal(b, &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-encoding/json +line):\n%s\nline: %s", diff, line)
	}
}

func FuzzAppendLine(f *testing.F) {
	f.Add("c1/1", "reason", "tool", int64(3))
	f.Add("\xff", "\u2028\x00\"", "", int64(-1))
	f.Fuzz(func(t *testing.T, key, reason, tool string, n int64) {
		ev := Event{Key: key, Reason: reason, Tool: tool, Units: Units{tool: n}, Latency: time.Duration(n)}
		checkDecodes(t, appendLine(nil, &ev), ev)
	})
}

// compactCases are events for the WAL's compact lines: every field set,
// the call id not readable off the key, a job's run, a time UnixNano
// cannot hold (such an event gets the spill's line).
func compactCases() []struct {
	name string
	ev   Event
} {
	at := time.Date(2026, 12, 2, 17, 4, 5, 123456789, time.UTC)
	return []struct {
		name string
		ev   Event
	}{
		{"attempt", Event{Key: "c1/2", CallID: "c1", Kind: KindAttempt, Attempt: 2, Time: at, Ingested: at.Add(-time.Second),
			Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Capability: "image.generate", Outcome: OutcomeUnknown,
			Reason: "a \"quoted\"\n\treason \\ \x01 <html> & \u2028 é 中", Latency: 3 * time.Millisecond,
			Units: Units{"calls": 1, "images": 4}, TenantUnitPrice: -7, TenantCost: 1, VendorUnitPrice: 10, VendorCost: -20,
			Currency: "USD", PriceVersion: "2026-12", Adjusts: "c0/call"}},
		{"call", Event{Key: "0194a3b2c1d0e0f1a2b3c4d5e6f7a8b9/call", CallID: "0194a3b2c1d0e0f1a2b3c4d5e6f7a8b9", Kind: KindCall,
			Time: at, Ingested: at.Add(time.Millisecond), Tenant: "acme", Outcome: OutcomeOK, Units: Units{}, Currency: "USD"}},
		{"merged call", Event{Key: "m1/call", CallID: "m1", Kind: KindCall, Attempt: 1, Time: at, Ingested: at.Add(time.Millisecond),
			Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Outcome: OutcomeOK, Latency: 3 * time.Millisecond,
			Units: Units{"calls": 1}, TenantUnitPrice: 5, TenantCost: 5, VendorUnitPrice: 2, VendorCost: 2, Currency: "USD",
			AttemptLatency: 2 * time.Millisecond}},
		{"job run", Event{Key: "job-7/run-2/1", CallID: "job-7", Kind: KindAttempt, Attempt: 1, Time: at, Ingested: at}},
		{"call id with a slash", Event{Key: "a/b/call", CallID: "a/b", Kind: KindCall, Time: at, Ingested: at}},
		{"key without a slash", Event{Key: "k", CallID: "", Time: at, Ingested: at}},
		{"other zone", Event{Key: "c/call", CallID: "c", Time: at.In(time.FixedZone("x", 3600)), Ingested: at}},
		{"zero times", Event{Key: "z/call", CallID: "z", Kind: KindCall}},
		{"far future", Event{Key: "f/call", CallID: "f", Time: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), Ingested: at}},
	}
}

// TestWALLineRoundTrip: every event's WAL line decodes to the event (times
// equal as instants); the compact form is what the WAL gets when the times
// fit, and it is less than half the spill line of a typical attempt.
func TestWALLineRoundTrip(t *testing.T) {
	for _, tt := range compactCases() {
		t.Run(tt.name, func(t *testing.T) {
			line := appendWALLine(nil, &tt.ev)
			compact := bytes.HasPrefix(line[9:], []byte(compactPrefix))
			if want := nanoTime(tt.ev.Time) && nanoTime(tt.ev.Ingested); compact != want {
				t.Errorf("compact line = %v, want %v: %s", compact, want, line)
			}
			got, ok := decodeLine(line)
			if !ok {
				t.Fatalf("line does not decode: %s", line)
			}
			if diff := cmp.Diff(tt.ev, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s\nline: %s", diff, line)
			}
		})
	}
	at := time.Now()
	ev := Event{Key: "0194a3b2c1d0e0f1a2b3c4d5e6f7a8b9/1", CallID: "0194a3b2c1d0e0f1a2b3c4d5e6f7a8b9", Kind: KindAttempt, Attempt: 1,
		Time: at, Ingested: at.Add(300 * time.Microsecond), Tenant: "acme", Vendor: "doubao", Tool: "generate_image",
		Outcome: OutcomeOK, Latency: 280 * time.Microsecond, Units: Units{UnitCalls: 1}, Currency: "USD"}
	if c, s := appendWALLine(nil, &ev), appendLine(nil, &ev); len(c)*2 > len(s) {
		t.Errorf("compact line %d bytes, spill line %d: not under half\n%s%s", len(c), len(s), c, s)
	}
}

// TestReadWALBothLineForms: a segment an earlier toolhub wrote (spill
// lines) and one holding both forms read back whole.
func TestReadWALBothLineForms(t *testing.T) {
	w := newTestWAL(t, SyncBatch)
	var want []Event
	var last *walBatch
	w.mu.Lock()
	for i, tt := range compactCases() {
		line := appendWALLine(nil, &tt.ev)
		if i%2 == 0 {
			line = appendLine(nil, &tt.ev)
		}
		last = w.appendLocked(line, false)
		want = append(want, tt.ev)
	}
	w.mu.Unlock()
	last.wait()
	got := readAll(t, w, w.seqNow())
	// A spill line keeps a time's zone; a compact line reads back in UTC.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events read (-want +got):\n%s", diff)
	}
}

func FuzzAppendWALLine(f *testing.F) {
	f.Add("c1/1", "c1", "reason", "tool", int64(3), int64(1764892800123456789))
	f.Add("\xff/\xfe", "\xff", "\u2028\x00\"", "", int64(-1), int64(-5))
	f.Add("a/b/c", "a", "", "x", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, key, callID, reason, tool string, n, ns int64) {
		at := time.Unix(0, ns).UTC()
		ev := Event{Key: key, CallID: callID, Reason: reason, Tool: tool, Units: Units{tool: n}, Latency: time.Duration(n),
			Time: at, Ingested: at.Add(time.Duration(n % int64(time.Hour))), TenantCost: Micros(n), Attempt: int(n % 1000)}
		checkDecodes(t, appendWALLine(nil, &ev), ev)
	})
}
