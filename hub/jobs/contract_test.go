package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestContractAddGet(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		j := newJob("acme", "weather.current", Queued, clk.Now())
		j.Priority = 1
		if err := s.Add(ctx, j); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := &Job{ID: j.ID, Tenant: "acme", Tool: "weather.current", Arguments: j.Arguments, Meta: j.Meta, Priority: 1,
			Status: Queued, NextAt: clk.Now().UTC(), Created: clk.Now().UTC(), Updated: clk.Now().UTC()}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Get (-want +got):\n%s", d)
		}
		if _, err := s.Get(ctx, "job_nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(missing) = %v, want ErrNotFound", err)
		}
		if err := s.Add(ctx, j); err == nil {
			t.Errorf("Add of an existing id: no error")
		}
		bad := newJob("acme", "x", Running, clk.Now())
		if err := s.Add(ctx, bad); err == nil {
			t.Errorf("Add with status running: no error")
		}
	})
}

func TestContractClaimFinish(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		mustClaimNone(t, s, "w1")
		j := newJob("acme", "t", Queued, clk.Now())
		if err := s.Add(ctx, j); err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(ctx, "w1", time.Minute)
		if err != nil || c == nil {
			t.Fatalf("Claim = %v, %v", c, err)
		}
		if c.ID != j.ID || c.Status != Running || c.Attempts != 1 || c.Owner != "w1" || !c.LeaseTil.Equal(clk.Now().Add(time.Minute)) {
			t.Errorf("claimed %+v", c)
		}
		if string(c.Arguments) != `{"city":"Paris"}` {
			t.Errorf("arguments = %s", c.Arguments)
		}
		mustClaimNone(t, s, "w2") // leased
		if err := s.Renew(ctx, j.ID, "w2", time.Minute); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Renew by a stranger = %v, want ErrLeaseLost", err)
		}
		if err := s.Renew(ctx, j.ID, "w1", time.Minute); err != nil {
			t.Errorf("Renew by owner = %v", err)
		}
		if err := s.Finish(ctx, j.ID, "w2", Outcome{Status: Succeeded}); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Finish by a stranger = %v, want ErrLeaseLost", err)
		}
		res := json.RawMessage(`{"content":[{"type":"text","text":"sunny"}]}`)
		keep := clk.Now().Add(time.Hour)
		if err := s.Finish(ctx, j.ID, "w1", Outcome{Status: Succeeded, Result: res, KeepUntil: keep}); err != nil {
			t.Fatalf("Finish = %v", err)
		}
		if err := s.Finish(ctx, j.ID, "w1", Outcome{Status: Failed}); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("second Finish = %v, want ErrLeaseLost", err)
		}
		got, _ := s.Get(ctx, j.ID)
		if got.Status != Succeeded || string(got.Result) != string(res) || !got.KeepUntil.Equal(keep) || got.Owner != "" {
			t.Errorf("after finish: %+v", got)
		}
		mustClaimNone(t, s, "w1")
		evs := allEvents(t, s, "acme")
		if d := cmp.Diff([]Status{Queued, Running, Succeeded}, statuses(evs, j.ID)); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
		if string(evs[2].Result) != string(res) {
			t.Errorf("succeeded event result = %s", evs[2].Result)
		}
	})
}

func TestContractPriorityOrder(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		batch := newJob("acme", "batch", Queued, clk.Now())
		batch.Priority = 1
		inter := newJob("acme", "interactive", Queued, clk.Now())
		for _, j := range []*Job{batch, inter} {
			if err := s.Add(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		first := claimWithin(t, s, "w", time.Minute)
		second := claimWithin(t, s, "w", time.Minute)
		if first.ID != inter.ID || second.ID != batch.ID {
			t.Errorf("claim order %s, %s: want interactive first", first.Tool, second.Tool)
		}
		if first.ID == second.ID {
			t.Errorf("claimed %s twice", first.ID)
		}
	})
}

func TestContractLeaseExpiryReclaim(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		j := newJob("acme", "t", Queued, clk.Now())
		if err := s.Add(ctx, j); err != nil {
			t.Fatal(err)
		}
		if c := claimWithin(t, s, "dead", 10*time.Second); c.ID != j.ID {
			t.Fatalf("claimed %s", c.ID)
		}
		mustClaimNone(t, s, "alive")
		clk.Add(11 * time.Second) // the dead worker's lease runs out
		c := claimWithin(t, s, "alive", 10*time.Second)
		if c.ID != j.ID || c.Attempts != 2 || c.Owner != "alive" {
			t.Fatalf("reclaimed %+v", c)
		}
		if err := s.Finish(ctx, j.ID, "dead", Outcome{Status: Succeeded}); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("late Finish by the dead worker = %v, want ErrLeaseLost", err)
		}
		if err := s.Renew(ctx, j.ID, "dead", time.Minute); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Renew by the dead worker = %v, want ErrLeaseLost", err)
		}
		if err := s.Finish(ctx, j.ID, "alive", Outcome{Status: Succeeded, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]Status{Queued, Running, Running, Succeeded}, statuses(allEvents(t, s, ""), j.ID)); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
		mustClaimNone(t, s, "alive")
	})
}

func TestContractRetryNotBeforeNextAt(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		later := newJob("acme", "t", Queued, clk.Now().Add(time.Hour))
		if err := s.Add(ctx, later); err != nil {
			t.Fatal(err)
		}
		mustClaimNone(t, s, "w")
		j := newJob("acme", "t", Queued, clk.Now())
		if err := s.Add(ctx, j); err != nil {
			t.Fatal(err)
		}
		claimWithin(t, s, "w", time.Minute)
		if err := s.Finish(ctx, j.ID, "w", Outcome{Status: Queued, Error: "unavailable: down", NextAt: clk.Now().Add(5 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Get(ctx, j.ID)
		if got.Status != Queued || got.LastError != "unavailable: down" {
			t.Errorf("after retry: %+v", got)
		}
		mustClaimNone(t, s, "w")
		clk.Add(5 * time.Second)
		c := claimWithin(t, s, "w", time.Minute)
		if c.ID != j.ID || c.Attempts != 2 {
			t.Errorf("claimed %s attempt %d, want %s attempt 2", c.ID, c.Attempts, j.ID)
		}
		if err := s.Finish(ctx, j.ID, "w", Outcome{Status: Succeeded}); err != nil {
			t.Fatal(err)
		}
		mustClaimNone(t, s, "w")
		clk.Add(time.Hour)
		if c := claimWithin(t, s, "w", time.Minute); c.ID != later.ID {
			t.Errorf("claimed %s, want the later job", c.ID)
		}
	})
}

func TestContractTransitions(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		parked := newJob("acme", "t", NeedsReview, time.Time{})
		parked.LastError = "budget review"
		rejected := newJob("acme", "t", NeedsReview, time.Time{})
		queued := newJob("acme", "t", Queued, clk.Now())
		for _, j := range []*Job{parked, rejected, queued} {
			if err := s.Add(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Transition(ctx, queued.ID, Queued, Canceled, "canceled", clk.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		mustClaimNone(t, s, "w") // parked jobs and canceled ones do not run
		if _, err := s.Transition(ctx, rejected.ID, NeedsReview, Rejected, "no", clk.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Transition(ctx, rejected.ID, NeedsReview, Queued, "", time.Time{}); !errors.Is(err, ErrConflict) {
			t.Errorf("approving a rejected job = %v, want ErrConflict", err)
		}
		if _, err := s.Transition(ctx, "job_nope", NeedsReview, Queued, "", time.Time{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("approving a missing job = %v, want ErrNotFound", err)
		}
		j, err := s.Transition(ctx, parked.ID, NeedsReview, Queued, "", time.Time{})
		if err != nil || j.Status != Queued {
			t.Fatalf("approve = %+v, %v", j, err)
		}
		if c := claimWithin(t, s, "w", time.Minute); c.ID != parked.ID {
			t.Errorf("claimed %s, want the approved job", c.ID)
		}
		mustClaimNone(t, s, "w")
		got, _ := s.Get(ctx, rejected.ID)
		if got.Status != Rejected || got.LastError != "no" {
			t.Errorf("rejected job: %+v", got)
		}
		if d := cmp.Diff([]Status{NeedsReview, Queued, Running}, statuses(allEvents(t, s, "acme"), parked.ID)); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
	})
}

func TestContractEventsResumeAndTenants(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		for i := range 6 {
			tenant := []string{"a", "b"}[i%2]
			if err := s.Add(ctx, newJob(tenant, "t", Queued, clk.Now())); err != nil {
				t.Fatal(err)
			}
		}
		all := allEvents(t, s, "")
		if len(all) != 6 {
			t.Fatalf("%d events, want 6", len(all))
		}
		for i := 1; i < len(all); i++ {
			if all[i].ID <= all[i-1].ID {
				t.Fatalf("event ids not increasing: %d then %d", all[i-1].ID, all[i].ID)
			}
		}
		a := allEvents(t, s, "a")
		if len(a) != 3 || slices.ContainsFunc(a, func(e Event) bool { return e.Tenant != "a" }) {
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
	})
}

func TestContractPurge(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		done := newJob("acme", "t", Queued, clk.Now())
		if err := s.Add(ctx, done); err != nil {
			t.Fatal(err)
		}
		claimWithin(t, s, "w", time.Minute)
		if err := s.Finish(ctx, done.ID, "w", Outcome{Status: Succeeded, KeepUntil: clk.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		waiting := newJob("acme", "t", NeedsReview, time.Time{})
		if err := s.Add(ctx, waiting); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Purge(ctx); err != nil || n != 0 {
			t.Errorf("Purge before the TTL = %d, %v", n, err)
		}
		clk.Add(time.Hour)
		if n, err := s.Purge(ctx); err != nil || n != 1 {
			t.Errorf("Purge after the TTL = %d, %v; want 1", n, err)
		}
		if _, err := s.Get(ctx, done.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("purged job: Get = %v", err)
		}
		if _, err := s.Get(ctx, waiting.ID); err != nil {
			t.Errorf("waiting job: Get = %v", err)
		}
	})
}

// TestContractReopen: a store closed with a running job (its process died)
// and opened again still has every job, and the running one is claimed
// again once its lease is over.
func TestContractReopen(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now)
		running := newJob("acme", "t", Queued, clk.Now())
		queued := newJob("acme", "t", Queued, clk.Now())
		if err := s.Add(ctx, running); err != nil {
			t.Fatal(err)
		}
		claimWithin(t, s, "dead", 10*time.Second)
		if err := s.Add(ctx, queued); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 := open(t, clk.Now)
		if c := claimWithin(t, s2, "new", 10*time.Second); c.ID != queued.ID {
			t.Fatalf("claimed %s, want the queued job", c.ID)
		}
		mustClaimNone(t, s2, "new")
		clk.Add(11 * time.Second)
		if c := claimWithin(t, s2, "new", 10*time.Second); c.ID != running.ID || c.Attempts != 2 {
			t.Fatalf("claimed %s attempt %d, want the dead worker's job at attempt 2", c.ID, c.Attempts)
		}
		if n := len(allEvents(t, s2, "acme")); n != 5 {
			t.Errorf("%d events after reopen, want 5", n)
		}
	})
}

// TestContractConcurrentClaims: many workers claiming at once get every
// job exactly once.
func TestContractConcurrentClaims(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		s := open(t, nil)
		const n = 40
		for range n {
			if err := s.Add(ctx, newJob("acme", "t", Queued, time.Now())); err != nil {
				t.Fatal(err)
			}
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
					if err := s.Finish(ctx, j.ID, owner, Outcome{Status: Succeeded}); err != nil {
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
	})
}
