package billing

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSpillRoundTrip(t *testing.T) {
	s, err := openSpill(filepath.Join(t.TempDir(), "spill"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 1, 2, 3, 4000, time.UTC)
	want := []Event{
		{Key: "a/call", CallID: "a", Kind: KindCall, Time: at, Ingested: at, Tenant: "t", Outcome: OutcomeOK, Units: Units{"calls": 1, "images": 2}, TenantCost: 5, Currency: "USD"},
		{Key: "a/1", CallID: "a", Kind: KindAttempt, Attempt: 1, Time: at, Ingested: at, Tenant: "t", Outcome: OutcomeTimeout, Reason: "timeout: \n\"x\"", Units: Units{"calls": 1}},
	}
	if err := s.write(want); err != nil {
		t.Fatal(err)
	}
	segs, err := s.rotate()
	if err != nil || len(segs) != 1 {
		t.Fatal(segs, err)
	}
	var got []Event
	corrupt, err := s.read(segs[0], 1, func(evs []Event) error { got = append(got, evs...); return nil })
	if err != nil || corrupt != 0 {
		t.Fatal(corrupt, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// FuzzDecodeSpillLine: a line never panics, and a line that decodes
// carried a matching checksum.
func FuzzDecodeSpillLine(f *testing.F) {
	f.Add([]byte("0badc0de {}\n"))
	f.Add([]byte(""))
	f.Add([]byte("00000000 {\"key\":\"x\"}"))
	f.Fuzz(func(t *testing.T, line []byte) {
		decodeLine(line)
	})
}
