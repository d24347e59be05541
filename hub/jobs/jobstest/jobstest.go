// Package jobstest is the contract suite of [jobs.Store] (and of
// [jobs.WebhookStore]): the SQLite store (hub/jobs/sqlitejobs) and the
// Redis one (hub/jobs/redisjobs) both pass it.
//
//	func TestContract(t *testing.T) {
//		jobstest.Run(t, func(t testing.TB) jobstest.Opener {
//			path := filepath.Join(t.TempDir(), "jobs.db")
//			return func(t testing.TB, now func() time.Time) jobs.Store {
//				s, _ := sqlitejobs.Open(t.Context(), path, &sqlitejobs.Options{Now: now})
//				t.Cleanup(func() { s.Close() })
//				return s
//			}
//		})
//	}
//
// Its helpers (a settable [Clock], [NewJob], [ClaimWithin], …) serve the
// drivers' own tests too.
package jobstest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/jobs"

	"github.com/toolhub/toolhub/internal/x/clocktest"
)

// Opener opens a store on the same data each time it is called (to test
// durability across a close and reopen), with the clock now (nil: the
// store's default). A store that is a [jobs.WebhookStore] too is tested
// as one.
type Opener func(t testing.TB, now func() time.Time) jobs.Store

// Run is the one suite every [jobs.Store] implementation passes.
// newOpener returns an Opener bound to fresh, empty data.
func Run(t *testing.T, newOpener func(t testing.TB) Opener) {
	t.Run("AddGet", func(t *testing.T) { testAddGet(t, newOpener(t)) })
	t.Run("ClaimFinish", func(t *testing.T) { testClaimFinish(t, newOpener(t)) })
	t.Run("PriorityOrder", func(t *testing.T) { testPriorityOrder(t, newOpener(t)) })
	t.Run("LeaseExpiryReclaim", func(t *testing.T) { testLeaseExpiryReclaim(t, newOpener(t)) })
	t.Run("RetryNotBeforeNextAt", func(t *testing.T) { testRetryNotBeforeNextAt(t, newOpener(t)) })
	t.Run("Transitions", func(t *testing.T) { testTransitions(t, newOpener(t)) })
	t.Run("EventsResumeAndTenants", func(t *testing.T) { testEventsResumeAndTenants(t, newOpener(t)) })
	t.Run("Purge", func(t *testing.T) { testPurge(t, newOpener(t)) })
	t.Run("Reopen", func(t *testing.T) { testReopen(t, newOpener(t)) })
	t.Run("ConcurrentClaims", func(t *testing.T) { testConcurrentClaims(t, newOpener(t)) })
	t.Run("WaitAndWake", func(t *testing.T) { testWaitAndWake(t, newOpener(t)) })
	t.Run("WakeRetries", func(t *testing.T) { testWakeRetries(t, newOpener(t)) })
	t.Run("CancelWaiting", func(t *testing.T) { testCancelWaiting(t, newOpener(t)) })
	t.Run("WebhookStore", func(t *testing.T) { testWebhookStore(t, newOpener(t)) })
}

// Clock is a settable clock (internal/x/clocktest).
type Clock = clocktest.Clock

// NewClock returns a clock set to now, truncated to milliseconds (what the
// stores keep).
func NewClock() *Clock { return clocktest.New(time.Now().Truncate(time.Millisecond)) }

// NewJob returns a new job of tenant for tool, with arguments and _meta.
func NewJob(tenant, tool string, st jobs.Status, nextAt time.Time) *jobs.Job {
	return &jobs.Job{ID: jobs.NewID(), Tenant: tenant, Tool: tool, Arguments: json.RawMessage(`{"city":"Paris"}`),
		Meta: json.RawMessage(`{"k":"v"}`), Status: st, NextAt: nextAt}
}

// ClaimWithin claims until a job comes or 5s pass (for the Redis store,
// whose takeover also waits for the stream entry to be idle by Redis's
// own clock).
func ClaimWithin(t testing.TB, s jobs.Store, owner string, lease time.Duration) *jobs.Job {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		j, err := s.Claim(context.Background(), owner, lease)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if j != nil {
			return j
		}
		time.Sleep(2 * time.Millisecond) // polling a condition, with a deadline
	}
	t.Fatalf("%s claimed nothing within 5s", owner)
	return nil
}

// MustClaimNone fails t unless owner's claim finds nothing to do.
func MustClaimNone(t testing.TB, s jobs.Store, owner string) {
	t.Helper()
	j, err := s.Claim(context.Background(), owner, time.Minute)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if j != nil {
		t.Fatalf("Claim by %s = job %s (%s), want none", owner, j.ID, j.Status)
	}
}

// mustAdd adds each job to s, failing t on the first error.
func mustAdd(t testing.TB, s jobs.Store, js ...*jobs.Job) {
	t.Helper()
	for _, j := range js {
		if err := s.Add(context.Background(), j); err != nil {
			t.Fatalf("Add %s: %v", j.ID, err)
		}
	}
}

// mustFinish finishes job id as owner with out, failing t on an error.
func mustFinish(t testing.TB, s jobs.Store, id, owner string, out jobs.Outcome) {
	t.Helper()
	if err := s.Finish(context.Background(), id, owner, out); err != nil {
		t.Fatalf("Finish %s by %s: %v", id, owner, err)
	}
}

// Statuses returns the statuses of job's events ("": every job's), in order.
func Statuses(evs []jobs.Event, job string) []jobs.Status {
	var out []jobs.Status
	for _, e := range evs {
		if job == "" || e.JobID == job {
			out = append(out, e.Status)
		}
	}
	return out
}

// AllEvents returns tenant's events ("": every tenant's), up to 10000.
func AllEvents(t testing.TB, s jobs.Store, tenant string) []jobs.Event {
	t.Helper()
	evs, err := s.Events(context.Background(), tenant, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// WaitStatus polls s until job id has status want, or fails t after 10s.
func WaitStatus(t testing.TB, s jobs.Store, id string, want jobs.Status) *jobs.Job {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := s.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for job %s to be %s (it is %s)", id, want, j.Status)
		}
		time.Sleep(2 * time.Millisecond) // polling a condition, with a deadline
	}
}

func testAddGet(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	s := open(t, clk.Now)
	j := NewJob("acme", "weather.current", jobs.Queued, clk.Now())
	j.Priority = 1
	mustAdd(t, s, j)
	got, err := s.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := &jobs.Job{ID: j.ID, Tenant: "acme", Tool: "weather.current", Arguments: j.Arguments, Meta: j.Meta, Priority: 1,
		Status: jobs.Queued, NextAt: clk.Now().UTC(), Created: clk.Now().UTC(), Updated: clk.Now().UTC()}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Get (-want +got):\n%s", d)
	}
	if _, err := s.Get(ctx, "job_nope"); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
	if err := s.Add(ctx, j); err == nil {
		t.Errorf("Add of an existing id: no error")
	}
	bad := NewJob("acme", "x", jobs.Running, clk.Now())
	if err := s.Add(ctx, bad); err == nil {
		t.Errorf("Add with status running: no error")
	}
}

func testClaimFinish(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	s := open(t, clk.Now)
	MustClaimNone(t, s, "w1")
	j := NewJob("acme", "t", jobs.Queued, clk.Now())
	mustAdd(t, s, j)
	c, err := s.Claim(ctx, "w1", time.Minute)
	if err != nil || c == nil {
		t.Fatalf("Claim = %v, %v", c, err)
	}
	if c.ID != j.ID || c.Status != jobs.Running || c.Attempts != 1 || c.Owner != "w1" || !c.LeaseTil.Equal(clk.Now().Add(time.Minute)) {
		t.Errorf("claimed %+v", c)
	}
	if string(c.Arguments) != `{"city":"Paris"}` {
		t.Errorf("arguments = %s", c.Arguments)
	}
	MustClaimNone(t, s, "w2") // leased
	if err := s.Renew(ctx, j.ID, "w2", time.Minute); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Errorf("Renew by a stranger = %v, want ErrLeaseLost", err)
	}
	if err := s.Renew(ctx, j.ID, "w1", time.Minute); err != nil {
		t.Errorf("Renew by owner = %v", err)
	}
	if err := s.Finish(ctx, j.ID, "w2", jobs.Outcome{Status: jobs.Succeeded}); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Errorf("Finish by a stranger = %v, want ErrLeaseLost", err)
	}
	res := json.RawMessage(`{"content":[{"type":"text","text":"sunny"}]}`)
	keep := clk.Now().Add(time.Hour)
	if err := s.Finish(ctx, j.ID, "w1", jobs.Outcome{Status: jobs.Succeeded, Result: res, KeepUntil: keep}); err != nil {
		t.Fatalf("Finish = %v", err)
	}
	if err := s.Finish(ctx, j.ID, "w1", jobs.Outcome{Status: jobs.Failed}); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Errorf("second Finish = %v, want ErrLeaseLost", err)
	}
	got, _ := s.Get(ctx, j.ID)
	if got.Status != jobs.Succeeded || string(got.Result) != string(res) || !got.KeepUntil.Equal(keep) || got.Owner != "" {
		t.Errorf("after finish: %+v", got)
	}
	MustClaimNone(t, s, "w1")
	evs := AllEvents(t, s, "acme")
	if d := cmp.Diff([]jobs.Status{jobs.Queued, jobs.Running, jobs.Succeeded}, Statuses(evs, j.ID)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if string(evs[2].Result) != string(res) {
		t.Errorf("succeeded event result = %s", evs[2].Result)
	}
}

func testPriorityOrder(t *testing.T, open Opener) {
	clk := NewClock()
	s := open(t, clk.Now)
	batch := NewJob("acme", "batch", jobs.Queued, clk.Now())
	batch.Priority = 1
	inter := NewJob("acme", "interactive", jobs.Queued, clk.Now())
	mustAdd(t, s, batch, inter)
	first := ClaimWithin(t, s, "w", time.Minute)
	second := ClaimWithin(t, s, "w", time.Minute)
	if first.ID != inter.ID || second.ID != batch.ID {
		t.Errorf("claim order %s, %s: want interactive first", first.Tool, second.Tool)
	}
	if first.ID == second.ID {
		t.Errorf("claimed %s twice", first.ID)
	}
}

func testLeaseExpiryReclaim(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	s := open(t, clk.Now)
	j := NewJob("acme", "t", jobs.Queued, clk.Now())
	mustAdd(t, s, j)
	if c := ClaimWithin(t, s, "dead", 10*time.Second); c.ID != j.ID {
		t.Fatalf("claimed %s", c.ID)
	}
	MustClaimNone(t, s, "alive")
	clk.Advance(11 * time.Second) // the dead worker's lease runs out
	c := ClaimWithin(t, s, "alive", 10*time.Second)
	if c.ID != j.ID || c.Attempts != 2 || c.Owner != "alive" {
		t.Fatalf("reclaimed %+v", c)
	}
	if err := s.Finish(ctx, j.ID, "dead", jobs.Outcome{Status: jobs.Succeeded}); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Errorf("late Finish by the dead worker = %v, want ErrLeaseLost", err)
	}
	if err := s.Renew(ctx, j.ID, "dead", time.Minute); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Errorf("Renew by the dead worker = %v, want ErrLeaseLost", err)
	}
	mustFinish(t, s, j.ID, "alive", jobs.Outcome{Status: jobs.Succeeded, Result: json.RawMessage(`{}`)})
	if d := cmp.Diff([]jobs.Status{jobs.Queued, jobs.Running, jobs.Running, jobs.Succeeded}, Statuses(AllEvents(t, s, ""), j.ID)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	MustClaimNone(t, s, "alive")
}

func testRetryNotBeforeNextAt(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	s := open(t, clk.Now)
	later := NewJob("acme", "t", jobs.Queued, clk.Now().Add(time.Hour))
	mustAdd(t, s, later)
	MustClaimNone(t, s, "w")
	j := NewJob("acme", "t", jobs.Queued, clk.Now())
	mustAdd(t, s, j)
	ClaimWithin(t, s, "w", time.Minute)
	mustFinish(t, s, j.ID, "w", jobs.Outcome{Status: jobs.Queued, Error: "unavailable: down", NextAt: clk.Now().Add(5 * time.Second)})
	got, _ := s.Get(ctx, j.ID)
	if got.Status != jobs.Queued || got.LastError != "unavailable: down" {
		t.Errorf("after retry: %+v", got)
	}
	MustClaimNone(t, s, "w")
	clk.Advance(5 * time.Second)
	c := ClaimWithin(t, s, "w", time.Minute)
	if c.ID != j.ID || c.Attempts != 2 {
		t.Errorf("claimed %s attempt %d, want %s attempt 2", c.ID, c.Attempts, j.ID)
	}
	mustFinish(t, s, j.ID, "w", jobs.Outcome{Status: jobs.Succeeded})
	MustClaimNone(t, s, "w")
	clk.Advance(time.Hour)
	if c := ClaimWithin(t, s, "w", time.Minute); c.ID != later.ID {
		t.Errorf("claimed %s, want the later job", c.ID)
	}
}

func testTransitions(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	s := open(t, clk.Now)
	parked := NewJob("acme", "t", jobs.NeedsReview, time.Time{})
	parked.LastError = "budget review"
	rejected := NewJob("acme", "t", jobs.NeedsReview, time.Time{})
	queued := NewJob("acme", "t", jobs.Queued, clk.Now())
	mustAdd(t, s, parked, rejected, queued)
	if _, err := s.Transition(ctx, queued.ID, jobs.Queued, jobs.Canceled, "canceled", clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	MustClaimNone(t, s, "w") // parked jobs and canceled ones do not run
	if _, err := s.Transition(ctx, rejected.ID, jobs.NeedsReview, jobs.Rejected, "no", clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, rejected.ID, jobs.NeedsReview, jobs.Queued, "", time.Time{}); !errors.Is(err, jobs.ErrConflict) {
		t.Errorf("approving a rejected job = %v, want ErrConflict", err)
	}
	if _, err := s.Transition(ctx, "job_nope", jobs.NeedsReview, jobs.Queued, "", time.Time{}); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("approving a missing job = %v, want ErrNotFound", err)
	}
	j, err := s.Transition(ctx, parked.ID, jobs.NeedsReview, jobs.Queued, "", time.Time{})
	if err != nil || j.Status != jobs.Queued {
		t.Fatalf("approve = %+v, %v", j, err)
	}
	if c := ClaimWithin(t, s, "w", time.Minute); c.ID != parked.ID {
		t.Errorf("claimed %s, want the approved job", c.ID)
	}
	MustClaimNone(t, s, "w")
	got, _ := s.Get(ctx, rejected.ID)
	if got.Status != jobs.Rejected || got.LastError != "no" {
		t.Errorf("rejected job: %+v", got)
	}
	if d := cmp.Diff([]jobs.Status{jobs.NeedsReview, jobs.Queued, jobs.Running}, Statuses(AllEvents(t, s, "acme"), parked.ID)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func testEventsResumeAndTenants(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	s := open(t, clk.Now)
	for i := range 6 {
		tenant := []string{"a", "b"}[i%2]
		mustAdd(t, s, NewJob(tenant, "t", jobs.Queued, clk.Now()))
	}
	all := AllEvents(t, s, "")
	if len(all) != 6 {
		t.Fatalf("%d events, want 6", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID <= all[i-1].ID {
			t.Fatalf("event ids not increasing: %d then %d", all[i-1].ID, all[i].ID)
		}
	}
	a := AllEvents(t, s, "a")
	if len(a) != 3 || slices.ContainsFunc(a, func(e jobs.Event) bool { return e.Tenant != "a" }) {
		t.Fatalf("tenant a events: %+v", a)
	}
	// Resume after the first event, in pages of one: the rest, once each.
	var got []int64
	after := a[0].ID
	for {
		page, err := s.Events(ctx, "a", after, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page[0].ID)
		after = page[0].ID
	}
	if d := cmp.Diff([]int64{a[1].ID, a[2].ID}, got); d != "" {
		t.Errorf("resumed ids (-want +got):\n%s", d)
	}
}

func testPurge(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	s := open(t, clk.Now)
	done := NewJob("acme", "t", jobs.Queued, clk.Now())
	mustAdd(t, s, done)
	ClaimWithin(t, s, "w", time.Minute)
	mustFinish(t, s, done.ID, "w", jobs.Outcome{Status: jobs.Succeeded, KeepUntil: clk.Now().Add(time.Hour)})
	waiting := NewJob("acme", "t", jobs.NeedsReview, time.Time{})
	mustAdd(t, s, waiting)
	if n, err := s.Purge(ctx); err != nil || n != 0 {
		t.Errorf("Purge before the TTL = %d, %v", n, err)
	}
	clk.Advance(time.Hour)
	if n, err := s.Purge(ctx); err != nil || n != 1 {
		t.Errorf("Purge after the TTL = %d, %v; want 1", n, err)
	}
	if _, err := s.Get(ctx, done.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("purged job: Get = %v", err)
	}
	if _, err := s.Get(ctx, waiting.ID); err != nil {
		t.Errorf("waiting job: Get = %v", err)
	}
}

// testReopen: a store closed with a running job (its process died)
// and opened again still has every job, and the running one is claimed
// again once its lease is over.
func testReopen(t *testing.T, open Opener) {
	clk := NewClock()
	s := open(t, clk.Now)
	running := NewJob("acme", "t", jobs.Queued, clk.Now())
	queued := NewJob("acme", "t", jobs.Queued, clk.Now())
	mustAdd(t, s, running)
	ClaimWithin(t, s, "dead", 10*time.Second)
	mustAdd(t, s, queued)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, clk.Now)
	if c := ClaimWithin(t, s2, "new", 10*time.Second); c.ID != queued.ID {
		t.Fatalf("claimed %s, want the queued job", c.ID)
	}
	MustClaimNone(t, s2, "new")
	clk.Advance(11 * time.Second)
	if c := ClaimWithin(t, s2, "new", 10*time.Second); c.ID != running.ID || c.Attempts != 2 {
		t.Fatalf("claimed %s attempt %d, want the dead worker's job at attempt 2", c.ID, c.Attempts)
	}
	if n := len(AllEvents(t, s2, "acme")); n != 5 {
		t.Errorf("%d events after reopen, want 5", n)
	}
}

// testConcurrentClaims: many workers claiming at once get every
// job exactly once.
func testConcurrentClaims(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t, nil)
	const n = 40
	for range n {
		mustAdd(t, s, NewJob("acme", "t", jobs.Queued, time.Now()))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			owner := "w" + string(rune('a'+w))
			for {
				j, err := s.Claim(ctx, owner, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if j == nil {
					return
				}
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
				if err := s.Finish(ctx, j.ID, owner, jobs.Outcome{Status: jobs.Succeeded}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d jobs claimed, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("job %s claimed %d times", id, c)
		}
	}
}

// testWaitAndWake: a job finished as jobs.Waiting gets its attempt
// back, is not claimed before its NextAt, and Wake makes it due at once.
func testWaitAndWake(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	s := open(t, clk.Now)
	j := NewJob("acme", "image.generate", jobs.Queued, clk.Now())
	mustAdd(t, s, j)
	c := ClaimWithin(t, s, "w1", time.Minute)
	mustFinish(t, s, c.ID, "w1", jobs.Outcome{Status: jobs.Waiting, Error: "circuit_open: doubao", NextAt: clk.Now().Add(time.Hour)})
	got, err := s.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != jobs.Waiting || got.Attempts != 0 || got.LastError != "circuit_open: doubao" {
		t.Errorf("after waiting: status %s, attempts %d, error %q; want waiting, 0", got.Status, got.Attempts, got.LastError)
	}
	MustClaimNone(t, s, "w2")
	if _, err := s.Transition(ctx, j.ID, jobs.Queued, jobs.Canceled, "", time.Time{}); !errors.Is(err, jobs.ErrConflict) {
		t.Errorf("queued→canceled of a waiting job = %v, want ErrConflict", err)
	}
	n, err := s.Wake(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Wake = %d, %v; want 1", n, err)
	}
	if n, err := s.Wake(ctx); err != nil || n != 0 {
		t.Errorf("second Wake = %d, %v; want 0", n, err)
	}
	c = ClaimWithin(t, s, "w2", time.Minute)
	if c.ID != j.ID || c.Attempts != 1 {
		t.Errorf("claimed after wake: %+v; want attempts 1", c)
	}
	// jobs.Waiting until its NextAt (the deadline) without a wake: due then.
	mustFinish(t, s, c.ID, "w2", jobs.Outcome{Status: jobs.Waiting, NextAt: clk.Now().Add(time.Minute)})
	MustClaimNone(t, s, "w3")
	clk.Advance(time.Minute)
	c = ClaimWithin(t, s, "w3", time.Minute)
	if c.ID != j.ID {
		t.Errorf("claimed %s, want %s", c.ID, j.ID)
	}
	mustFinish(t, s, c.ID, "w3", jobs.Outcome{Status: jobs.Succeeded, KeepUntil: clk.Now().Add(time.Hour)})
	want := []jobs.Status{jobs.Queued, jobs.Running, jobs.Waiting, jobs.Queued, jobs.Running, jobs.Waiting, jobs.Running, jobs.Succeeded}
	if d := cmp.Diff(want, Statuses(AllEvents(t, s, "acme"), j.ID)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// testWakeRetries: a job between retries (its backoff grown by
// failures during an outage) also tries again at once on Wake.
func testWakeRetries(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	s := open(t, clk.Now)
	j := NewJob("acme", "image.generate", jobs.Queued, clk.Now())
	mustAdd(t, s, j)
	c := ClaimWithin(t, s, "w1", time.Minute)
	mustFinish(t, s, c.ID, "w1", jobs.Outcome{Status: jobs.Queued, Error: "unavailable: 500", NextAt: clk.Now().Add(30 * time.Second)})
	MustClaimNone(t, s, "w2")
	if n, err := s.Wake(ctx); err != nil || n != 1 {
		t.Fatalf("Wake = %d, %v; want 1", n, err)
	}
	c = ClaimWithin(t, s, "w2", time.Minute)
	if c.ID != j.ID || c.Attempts != 2 {
		t.Errorf("claimed after wake: %+v", c)
	}
}

// testCancelWaiting: a job waiting for a vendor can be canceled.
func testCancelWaiting(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	q := jobs.NewQueue(open(t, clk.Now), &jobs.Options{Now: clk.Now})
	id, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "image.generate"})
	if err != nil {
		t.Fatal(err)
	}
	c := ClaimWithin(t, q, "w1", time.Minute)
	if err := q.Finish(ctx, c.ID, "w1", jobs.Outcome{Status: jobs.Waiting, NextAt: clk.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	j, err := q.Cancel(ctx, id, "")
	if err != nil || j.Status != jobs.Canceled {
		t.Fatalf("Cancel = %+v, %v", j, err)
	}
	if n, err := q.Wake(ctx); err != nil || n != 0 {
		t.Errorf("Wake after cancel = %d, %v; want 0", n, err)
	}
	MustClaimNone(t, q, "w2")
}

func testWebhookStore(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock()
	s := open(t, clk.Now).(jobs.WebhookStore)
	if _, ok, err := s.GetWebhook(ctx, "acme"); ok || err != nil {
		t.Fatalf("GetWebhook before any = %v, %v", ok, err)
	}
	if err := s.PutWebhook(ctx, "acme", jobs.Webhook{URL: "https://a.example/h", Secret: "s1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutWebhook(ctx, "acme", jobs.Webhook{URL: "https://a.example/h2", Secret: "s2"}); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := s.GetWebhook(ctx, "acme"); !ok || err != nil || h != (jobs.Webhook{URL: "https://a.example/h2", Secret: "s2"}) {
		t.Errorf("GetWebhook = %+v, %v, %v", h, ok, err)
	}
	if _, ok, _ := s.GetWebhook(ctx, "other"); ok {
		t.Errorf("another tenant sees acme's webhook")
	}
	if err := s.DeleteWebhook(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.GetWebhook(ctx, "acme"); ok {
		t.Errorf("webhook still there after delete")
	}
	first, err := s.ClaimDelivery(ctx, 42, time.Hour)
	second, err2 := s.ClaimDelivery(ctx, 42, time.Hour)
	other, err3 := s.ClaimDelivery(ctx, 43, time.Hour)
	if !first || second || !other || err != nil || err2 != nil || err3 != nil {
		t.Errorf("claims of 42, 42, 43 = %v %v %v (%v %v %v); want true false true", first, second, other, err, err2, err3)
	}
}
