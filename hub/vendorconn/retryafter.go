package vendorconn

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter is the longest wait a vendor's Retry-After is taken for.
const MaxRetryAfter = 24 * time.Hour

// RetryAfter reads a vendor's Retry-After value, delay-seconds or an HTTP
// date, as a wait from now: zero for none, a past date or nonsense; at
// most MaxRetryAfter.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-") {
		if err != nil || n > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		if n <= 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d.Round(time.Second), MaxRetryAfter)
		}
	}
	return 0
}
