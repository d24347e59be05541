package ledgersql

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/toolhub/toolhub/billing"
)

// UnitsJSON must write what json.Marshal writes for the map (sorted keys),
// with or without its fast path for plain keys.
func TestUnitsJSON(t *testing.T) {
	for _, tt := range []struct {
		name string
		u    billing.Units
	}{
		{"nil", nil},
		{"calls", billing.Units{"calls": 1}},
		{"one other", billing.Units{"tokens": 12}},
		{"synthetic", billing.Units{"calls": 1, "tokens": 499}},
		{"many", billing.Units{"calls": 1, "images": 2, "tokens": -3, "seconds": 9, "gpu.ms": 5, "a_b-c": 6, "Z9": 7, "x": 8, "y": 9}},
		{"escaped", billing.Units{"calls": 1, `q"uote`: 2, "<tag>": 3, "é": 4, "tab\t": 5, "": 6}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, _ := json.Marshal(map[string]int64(tt.u))
			if tt.u == nil {
				want = []byte("{}")
			}
			if got := UnitsJSON(tt.u); got != string(want) {
				t.Errorf("UnitsJSON = %s, want %s", got, want)
			}
		})
	}
}

func FuzzUnitsJSON(f *testing.F) {
	f.Add("tokens", int64(3), "calls", int64(1))
	f.Add("<", int64(-1), "\u2028", int64(0))
	f.Fuzz(func(t *testing.T, k1 string, v1 int64, k2 string, v2 int64) {
		u := billing.Units{k1: v1, k2: v2}
		want, _ := json.Marshal(map[string]int64(u))
		if got := UnitsJSON(u); got != string(want) {
			t.Errorf("UnitsJSON(%v) = %s, want %s", u, got, want)
		}
	})
}

// TestUnitsColumnRoundTrip: the units column is empty only when Scan can
// rebuild the units from the images, tokens and seconds columns.
func TestUnitsColumnRoundTrip(t *testing.T) {
	for _, u := range []billing.Units{
		{billing.UnitCalls: 1}, {billing.UnitCalls: 1, billing.UnitTokens: 7}, {billing.UnitCalls: 1, billing.UnitImages: 2, billing.UnitSeconds: 3},
		{billing.UnitCalls: 1, billing.UnitImages: 0}, {billing.UnitCalls: 2}, {}, nil, {billing.UnitCalls: 1, "pages": 4},
	} {
		ev := billing.Event{Key: "k/call", Kind: billing.KindCall, Units: u}
		vals := Values(&ev)
		got, err := scan(func(dest ...any) error {
			for i, d := range dest {
				switch d := d.(type) {
				case *string:
					*d = vals[i].(string)
				case *int64:
					*d = vals[i].(int64)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := u
		if want == nil {
			want = billing.Units{}
		}
		if !maps.Equal(got.Units, want) || len(got.Units) != len(want) {
			t.Errorf("units %v stored as %q read back as %v", u, vals[13], got.Units)
		}
	}
}
