// Package jobrow holds how the job stores (sqlitejobs, redisjobs) encode a
// job's fields in a row: times as Unix milliseconds (0: none), JSON as
// text ("": none).
package jobrow

import (
	"encoding/json"
	"time"
)

// MS is t in Unix milliseconds; 0 for the zero time.
func MS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromMS is the UTC time of v Unix milliseconds; the zero time for 0.
func FromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// NullJSON is b as text; "" when b is empty.
func NullJSON(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	return string(b)
}

// RawOrNil is s as JSON; nil when s is "".
func RawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}
