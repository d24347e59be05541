package hub

import (
	"encoding/hex"
	"testing"
	"time"
)

// Call ids sort by the millisecond they were made in and stay 32 hex
// digits with 80 random bits (no two equal within a millisecond).
func TestNewCallIDSortsByTime(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	prev := ""
	for i := range 2000 {
		at := t0.Add(time.Duration(i/4) * time.Millisecond) // four ids per millisecond
		id := newCallID(at)
		if len(id) != 32 {
			t.Fatalf("id %q: %d characters, want 32", id, len(id))
		}
		if _, err := hex.DecodeString(id); err != nil {
			t.Fatalf("id %q: not hex: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
		if i%4 == 0 && prev != "" && id <= prev {
			t.Fatalf("id %q made at %v sorts before %q made a millisecond earlier", id, at, prev)
		}
		if id[:12] != newCallID(at)[:12] {
			t.Fatalf("ids of one millisecond differ in their time prefix")
		}
		prev = id
	}
}
