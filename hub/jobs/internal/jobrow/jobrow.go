// Package jobrow holds how the job stores (sqlitejobs, redisjobs) encode a
// job's fields in a row: times as Unix milliseconds (0: none), JSON as
// text ("": none).
package jobrow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolhub/toolhub/hub/jobs"
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

// Added checks that a job being added is queued or waits for review, and
// stamps it as added at now: Created (unless set) and Updated.
func Added(j *jobs.Job, now time.Time) error {
	if j.Status != jobs.Queued && j.Status != jobs.NeedsReview {
		return fmt.Errorf("jobs: add %s: status %q: want queued or needs_review", j.ID, j.Status)
	}
	if j.Created.IsZero() {
		j.Created = now
	}
	j.Updated = now
	return nil
}
