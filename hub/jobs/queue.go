package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolhub/toolhub/hub"
)

// Options configure a [Queue]. Nil means the defaults.
type Options struct {
	// ResultTTL is how long a final job (and its result) is kept; zero
	// means 24h.
	ResultTTL time.Duration
	// Now is the clock for KeepUntil; nil means time.Now.
	Now func() time.Time
}

// Queue is the job queue in front of a [Store]: it turns calls into jobs
// (it is the fallback chain's Enqueuer and Parker), runs the operator's
// approve / reject / cancel, and tells local subscribers at once when
// something changed (subscribers on other instances see changes by polling
// [Queue.Events]). A Queue is itself a Store, so give it to a [Pool] to
// have the pool's changes signalled too.
type Queue struct {
	store Store
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	changed chan struct{}
}

var _ Store = (*Queue)(nil)

// NewQueue returns a queue over s.
func NewQueue(s Store, opts *Options) *Queue {
	q := &Queue{store: s, ttl: 24 * time.Hour, now: time.Now, changed: make(chan struct{})}
	if opts != nil {
		if opts.ResultTTL > 0 {
			q.ttl = opts.ResultTTL
		}
		if opts.Now != nil {
			q.now = opts.Now
		}
	}
	return q
}

// ResultTTL is how long final jobs are kept.
func (q *Queue) ResultTTL() time.Duration { return q.ttl }

// Changed returns a channel closed at the next change made through this
// Queue.
func (q *Queue) Changed() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.changed
}

func (q *Queue) signal() {
	q.mu.Lock()
	close(q.changed)
	q.changed = make(chan struct{})
	q.mu.Unlock()
}

func jobFromCall(c *hub.Call, st Status, reason string) (*Job, error) {
	args, err := json.Marshal(c.Arguments)
	if err != nil {
		return nil, hub.Errorf(hub.CodeInvalidArguments, "job for %s: arguments are not JSON: %w", c.Name, err)
	}
	if c.Arguments == nil {
		args = []byte("{}")
	}
	var meta []byte
	if len(c.Meta) > 0 {
		if meta, err = json.Marshal(c.Meta); err != nil {
			return nil, hub.Errorf(hub.CodeInvalidRequest, "job for %s: _meta is not JSON: %w", c.Name, err)
		}
	}
	return &Job{ID: NewID(), Tenant: c.Tenant, Tool: c.Name, Arguments: args, Meta: meta,
		Priority: int(c.Priority), Status: st, LastError: reason}, nil
}

// ErrAlreadyJob is returned by Enqueue and Park for a call that a worker
// is running for a job (its Meta carries [MetaJobID]): a job is not queued
// again from inside itself; its worker retries it instead.
var ErrAlreadyJob = errors.New("jobs: the call is already a job")

func alreadyJob(c *hub.Call) error {
	if id, ok := c.Meta[MetaJobID].(string); ok && id != "" {
		return &hub.Error{Code: hub.CodeUnavailable, Message: "no vendor answered job " + id + "; the job's worker will retry it", Err: ErrAlreadyJob}
	}
	return nil
}

// Enqueue stores c as a queued job and returns its id.
func (q *Queue) Enqueue(ctx context.Context, c *hub.Call) (string, error) {
	if err := alreadyJob(c); err != nil {
		return "", err
	}
	j, err := jobFromCall(c, Queued, "")
	if err != nil {
		return "", err
	}
	j.NextAt = q.now()
	if err := q.Add(ctx, j); err != nil {
		return "", err
	}
	return j.ID, nil
}

// Park stores c as a job that waits for an operator (NeedsReview), with
// the reason, and returns its id.
func (q *Queue) Park(ctx context.Context, c *hub.Call, reason string) (string, error) {
	if err := alreadyJob(c); err != nil {
		return "", err
	}
	j, err := jobFromCall(c, NeedsReview, reason)
	if err != nil {
		return "", err
	}
	if err := q.Add(ctx, j); err != nil {
		return "", err
	}
	return j.ID, nil
}

// Approve queues a parked job for the workers.
func (q *Queue) Approve(ctx context.Context, id string) (*Job, error) {
	return q.Transition(ctx, id, NeedsReview, Queued, "", time.Time{})
}

// Reject ends a parked job as rejected, with the reason.
func (q *Queue) Reject(ctx context.Context, id, reason string) (*Job, error) {
	if reason == "" {
		reason = "rejected by an operator"
	}
	return q.Transition(ctx, id, NeedsReview, Rejected, reason, q.now().Add(q.ttl))
}

// Cancel ends a job that has not started: queued (also between retries),
// waiting for a vendor, or waiting for review. A running job cannot be canceled (ErrConflict).
func (q *Queue) Cancel(ctx context.Context, id, reason string) (*Job, error) {
	if reason == "" {
		reason = "canceled"
	}
	j, err := q.Transition(ctx, id, Queued, Canceled, reason, q.now().Add(q.ttl))
	for _, from := range []Status{Waiting, NeedsReview} {
		if !errors.Is(err, ErrConflict) {
			break
		}
		if j2, err2 := q.Transition(ctx, id, from, Canceled, reason, q.now().Add(q.ttl)); err2 == nil {
			return j2, nil
		}
	}
	return j, err
}

// The Store methods, passed through, signalling changes.

func (q *Queue) Add(ctx context.Context, j *Job) error {
	if err := q.store.Add(ctx, j); err != nil {
		return err
	}
	q.signal()
	return nil
}

func (q *Queue) Get(ctx context.Context, id string) (*Job, error) { return q.store.Get(ctx, id) }

func (q *Queue) Claim(ctx context.Context, owner string, lease time.Duration) (*Job, error) {
	j, err := q.store.Claim(ctx, owner, lease)
	if j != nil {
		q.signal()
	}
	return j, err
}

func (q *Queue) Renew(ctx context.Context, id, owner string, lease time.Duration) error {
	return q.store.Renew(ctx, id, owner, lease)
}

func (q *Queue) Finish(ctx context.Context, id, owner string, out Outcome) error {
	if err := q.store.Finish(ctx, id, owner, out); err != nil {
		return err
	}
	q.signal()
	return nil
}

// Wake makes every job waiting for a vendor due now, here and (with a
// shared store) on every instance, and returns how many it woke.
func (q *Queue) Wake(ctx context.Context) (int, error) {
	n, err := q.store.Wake(ctx)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		q.signal()
	}
	return n, nil
}

// Waker is implemented by stores shared by instances that tell each other
// of a [Store.Wake] (hub/jobs/redisjobs, over pub/sub): Wakes calls fn on every wake,
// made here or elsewhere, until ctx is done. It calls ready once the wakes
// made from then on reach fn (or once it gave up trying: a [Pool] then
// relies on its poll until they do).
type Waker interface {
	Wakes(ctx context.Context, ready, fn func())
}

// subscribeWait bounds how long [Pool.Start] waits for a [Waker] to be
// ready.
const subscribeWait = 10 * time.Second

// Wakes passes [Waker] through for the store under the queue; when the
// store is not shared it calls ready and returns.
func (q *Queue) Wakes(ctx context.Context, ready, fn func()) {
	if w, ok := q.store.(Waker); ok {
		w.Wakes(ctx, ready, fn)
		return
	}
	ready()
}

func (q *Queue) Transition(ctx context.Context, id string, from, to Status, reason string, keepUntil time.Time) (*Job, error) {
	j, err := q.store.Transition(ctx, id, from, to, reason, keepUntil)
	if err != nil {
		return nil, err
	}
	q.signal()
	return j, nil
}

func (q *Queue) Events(ctx context.Context, tenant string, after int64, limit int) ([]Event, error) {
	return q.store.Events(ctx, tenant, after, limit)
}

func (q *Queue) Purge(ctx context.Context) (int, error) { return q.store.Purge(ctx) }

// ForgetOwner passes a stopped pool's owner name to stores that keep
// per-worker state (the Redis consumer group).
func (q *Queue) ForgetOwner(ctx context.Context, owner string) error {
	if f, ok := q.store.(ownerForgetter); ok {
		return f.ForgetOwner(ctx, owner)
	}
	return nil
}

type ownerForgetter interface {
	ForgetOwner(ctx context.Context, owner string) error
}

// Close closes the store.
func (q *Queue) Close() error { return q.store.Close() }

// Follow calls fn with every event of tenant ("" for all) after id after,
// in order, until ctx is done or fn returns an error. It waits for local
// changes and polls the store every poll (zero means 1s) for changes made
// by other instances.
func (q *Queue) Follow(ctx context.Context, tenant string, after int64, poll time.Duration, fn func(Event) error) error {
	if poll <= 0 {
		poll = time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		changed := q.Changed()
		evs, err := q.Events(ctx, tenant, after, 256)
		if err != nil {
			return fmt.Errorf("jobs: follow events: %w", err)
		}
		for _, e := range evs {
			if err := fn(e); err != nil {
				return err
			}
			after = e.ID
		}
		if len(evs) == 256 {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
	}
}
