package billing

import (
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := appendLine(nil, &tt.ev)
			got, ok := decodeSpillLine(line)
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

func FuzzAppendLine(f *testing.F) {
	f.Add("c1/1", "reason", "tool", int64(3))
	f.Add("\xff", "\u2028\x00\"", "", int64(-1))
	f.Fuzz(func(t *testing.T, key, reason, tool string, n int64) {
		ev := Event{Key: key, Reason: reason, Tool: tool, Units: Units{tool: n}, Latency: time.Duration(n)}
		got, ok := decodeSpillLine(appendLine(nil, &ev))
		if !ok {
			t.Fatal("line does not decode")
		}
		b, _ := json.Marshal(&ev)
		var want Event
		json.Unmarshal(b, &want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-encoding/json +appendLine):\n%s", diff)
		}
	})
}
