package vendorconn

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"0", 0},
		{"-3", 0},
		{"soon", 0},
		{"99999999999", 24 * time.Hour},
		{"99999999999999999999", 24 * time.Hour},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), 24 * time.Hour},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{now.Add(-30 * time.Second).Format(http.TimeFormat), 0},
	} {
		if got := RetryAfter(c.in, now); got != c.want {
			t.Errorf("RetryAfter(%q) = %v; want %v", c.in, got, c.want)
		}
	}
}
