package a2a

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An agent's Retry-After is read as the MCP vendors' is: a huge delay is
// capped at a day (not overflowed into a negative or tiny wait), a date
// in the past is no wait.
func TestStatusTransportRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"2":                   2 * time.Second,
		"99999999999":         24 * time.Hour,
		"9223372036854775807": 24 * time.Hour,
		now.Add(-30 * time.Second).Format(http.TimeFormat): 0,
		now.Add(30 * time.Second).Format(http.TimeFormat):  30 * time.Second,
	} {
		st := &statusTransport{now: func() time.Time { return now }, base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {in}}, Body: io.NopCloser(strings.NewReader("busy"))}, nil
		})}
		req, _ := http.NewRequest(http.MethodPost, "http://agent.test/", nil)
		_, err := st.RoundTrip(req)
		var se *StatusError
		if !errors.As(err, &se) || se.Wait != want {
			t.Errorf("Retry-After %q: %v; want a wait of %v", in, err, want)
		}
	}
}
