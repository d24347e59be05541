package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolhub/toolhub/hub"
)

// Status is where a job is in its life.
type Status string

// The statuses. Succeeded, Failed, Rejected and Canceled are final.
const (
	Queued      Status = "queued"       // waiting for a worker (maybe until NextAt)
	Waiting     Status = "waiting"      // no vendor of its chain can answer: waits to be woken (or until NextAt, its deadline)
	Running     Status = "running"      // claimed by a worker holding a lease
	Succeeded   Status = "succeeded"    // Result holds the tool's answer
	Failed      Status = "failed"       // past its deadline, or a permanent error; see LastError
	NeedsReview Status = "needs_review" // parked: an operator must approve or reject it
	Rejected    Status = "rejected"     // an operator rejected it
	Canceled    Status = "canceled"     // canceled before it ran
)

// Final reports whether s is a final status.
func (s Status) Final() bool {
	switch s {
	case Succeeded, Failed, Rejected, Canceled:
		return true
	}
	return false
}

// Meta keys the pool sets on the call it runs for a job.
const (
	// MetaJobID carries the job's id. A fallback chain must not enqueue a
	// call that carries it again (it is already a job).
	MetaJobID = hub.MetaJobID
	// MetaIdempotencyKey carries the job's id as an idempotency key for the
	// vendor: a job's call may reach the vendor twice when a worker dies
	// after the vendor answered but before the job was completed.
	MetaIdempotencyKey = hub.MetaIdempotencyKey
)

// Errors of the stores.
var (
	ErrNotFound  = errors.New("jobs: no such job")
	ErrLeaseLost = errors.New("jobs: lease lost (the job was reclaimed by another worker or finished)")
	ErrConflict  = errors.New("jobs: job is not in the expected status")
	ErrClosed    = errors.New("jobs: store closed")
)

// Job is one durable async call.
type Job struct {
	ID        string          `json:"id"`
	Tenant    string          `json:"tenant"`
	Tool      string          `json:"tool"`                // catalog name (vendor tool or capability)
	Arguments json.RawMessage `json:"arguments,omitempty"` // JSON object
	Meta      json.RawMessage `json:"meta,omitempty"`      // JSON object: the call's _meta
	Priority  int             `json:"priority"`            // hub.Priority: lower runs first
	Status    Status          `json:"status"`
	Attempts  int             `json:"attempts"` // claims so far
	NextAt    time.Time       `json:"next_at"`  // not claimed before
	LastError string          `json:"last_error,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"` // see [ResultJSON]
	Owner     string          `json:"-"`                // the worker holding the lease
	LeaseTil  time.Time       `json:"-"`
	Created   time.Time       `json:"created"`
	Updated   time.Time       `json:"updated"`
	KeepUntil time.Time       `json:"keep_until,omitzero"` // a final job is purged after it
}

// Event is one status change of one job. IDs grow monotonically over the
// whole store, so a subscriber resumes after the last id it saw.
type Event struct {
	ID       int64           `json:"id"`
	JobID    string          `json:"job_id"`
	Tenant   string          `json:"tenant"`
	Tool     string          `json:"tool"`
	Status   Status          `json:"status"`
	Attempts int             `json:"attempts"`
	Error    string          `json:"error,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"` // on succeeded
	At       time.Time       `json:"at"`
}

// Outcome is how a worker finishes a claimed job.
type Outcome struct {
	// Status is Succeeded, Failed, Queued (retry at NextAt) or Waiting
	// (no vendor could take the call: wait until woken or NextAt, and
	// give the claim's attempt back, since no vendor was tried).
	Status    Status
	Result    json.RawMessage // on Succeeded
	Error     string          // on Failed, a retry or a wait
	NextAt    time.Time       // on a retry or a wait
	KeepUntil time.Time       // on a final status: purge after
}

// Check reports an Outcome a Store must refuse to finish job id with: a
// status a run cannot end in.
func (o Outcome) Check(id string) error {
	switch o.Status {
	case Succeeded, Failed, Queued, Waiting:
		return nil
	}
	return fmt.Errorf("jobs: finish %s: status %q: want succeeded, failed, queued or waiting", id, o.Status)
}

// Store keeps jobs and their events durably. Every change of status
// appends an [Event] in the same atomic step. Implementations:
// hub/jobs/sqlitejobs (embedded) and hub/jobs/redisjobs (shared by
// instances); both pass one contract suite, hub/jobs/jobstest.
type Store interface {
	// Add stores a new job (status Queued or NeedsReview) and its event.
	Add(ctx context.Context, j *Job) error
	// Get returns a job, or ErrNotFound.
	Get(ctx context.Context, id string) (*Job, error)
	// Claim leases the next due job to owner until now+lease: a queued or
	// waiting job whose NextAt has come, or a running job whose lease expired (its
	// worker died). It counts an attempt. It returns nil, nil when there is
	// nothing to do.
	Claim(ctx context.Context, owner string, lease time.Duration) (*Job, error)
	// Renew extends owner's lease, or returns ErrLeaseLost.
	Renew(ctx context.Context, id, owner string, lease time.Duration) error
	// Finish completes owner's claim with an outcome; a compare-and-set on
	// the lease owner: ErrLeaseLost when the job was reclaimed or finished.
	// A Waiting outcome takes back the attempt its claim counted.
	Finish(ctx context.Context, id, owner string, out Outcome) error
	// Wake makes every Waiting job due now (Queued), and every queued job
	// waiting for its next try, and returns how many it woke: a vendor can
	// take traffic again. Stores shared by instances tell the other
	// instances' pools too (see [Waker]).
	Wake(ctx context.Context) (int, error)
	// Transition moves a job from one status to another outside workers
	// (approve: NeedsReview→Queued, reject: NeedsReview→Rejected, cancel:
	// Queued→Canceled), or returns ErrConflict. reason goes in LastError.
	Transition(ctx context.Context, id string, from, to Status, reason string, keepUntil time.Time) (*Job, error)
	// Events returns up to limit events with ids above after, oldest first;
	// tenant "" means every tenant.
	Events(ctx context.Context, tenant string, after int64, limit int) ([]Event, error)
	// Purge deletes final jobs whose KeepUntil has passed, and returns how many.
	Purge(ctx context.Context) (int, error)
	Close() error
}

// ResultJSON is the stored form of a [hub.Result].
type ResultJSON struct {
	Content    json.RawMessage `json:"content"`
	Structured any             `json:"structuredContent,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	Provenance *hub.Provenance `json:"provenance,omitempty"`
	// Findings: the vendor's result scan flagged this text (not changed).
	Findings []hub.Finding `json:"findings,omitempty"`
}

// EncodeResult returns r as stored in [Job.Result].
func EncodeResult(r *hub.Result) (json.RawMessage, error) {
	if r == nil {
		return json.RawMessage(`{"content":[]}`), nil
	}
	content := json.RawMessage("[]")
	if len(r.Content) > 0 {
		b, err := json.Marshal(r.Content)
		if err != nil {
			return nil, fmt.Errorf("jobs: encode result content: %w", err)
		}
		content = b
	}
	p := r.Provenance
	b, err := json.Marshal(ResultJSON{Content: content, Structured: r.Structured, IsError: r.IsError, Provenance: &p, Findings: r.Findings})
	if err != nil {
		return nil, fmt.Errorf("jobs: encode result: %w", err)
	}
	return b, nil
}

// NewID returns a random job id.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "job_" + hex.EncodeToString(b[:])
}
