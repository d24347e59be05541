package vendorconn

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for n, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		want *= time.Millisecond
		for range 50 {
			if d := b.Delay(n); d < want/2 || d > want {
				t.Fatalf("Delay(%d) = %v; want in [%v, %v]", n, d, want/2, want)
			}
		}
	}
	if d := b.Delay(1000); d > time.Second {
		t.Errorf("Delay(1000) = %v", d)
	}
	if got := (Backoff{}).WithDefaults(); got.Min != 500*time.Millisecond || got.Max != 30*time.Second {
		t.Errorf("defaults = %+v", got)
	}
}
