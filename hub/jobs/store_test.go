package jobs

import (
	"context"
	"encoding/json"
	"github.com/redis/go-redis/v9"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/redistest"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Now().Truncate(time.Millisecond)} }

func (c *fakeClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// opener opens a store on the same data each time it is called (to test
// durability across a close and reopen).
type opener func(t testing.TB, now func() time.Time) Store

type impl struct {
	name string
	// newOpener returns an opener bound to fresh, empty data.
	newOpener func(t testing.TB) opener
}

func impls() []impl {
	return []impl{
		{"sqlite", func(t testing.TB) opener {
			path := filepath.Join(t.TempDir(), "jobs.db")
			return func(t testing.TB, now func() time.Time) Store {
				s, err := OpenSQLite(context.Background(), path, &SQLiteOptions{Now: now})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		}},
		{"redis", func(t testing.TB) opener {
			c := redistest.Client(t)
			p := redistest.Prefix(t, c)
			return func(t testing.TB, now func() time.Time) Store {
				s, err := NewRedis(context.Background(), c, &RedisOptions{Prefix: p, Now: now, ReclaimIdle: time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		}},
	}
}

// forEach runs a contract test against every Store implementation.
func forEach(t *testing.T, fn func(t *testing.T, open opener)) {
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) { fn(t, im.newOpener(t)) })
	}
}

func newJob(tenant, tool string, st Status, nextAt time.Time) *Job {
	return &Job{ID: NewID(), Tenant: tenant, Tool: tool, Arguments: json.RawMessage(`{"city":"Paris"}`),
		Meta: json.RawMessage(`{"k":"v"}`), Status: st, NextAt: nextAt}
}

// claimWithin claims until a job comes or the deadline passes (for the
// Redis store, whose takeover also waits for the stream entry to be idle
// by Redis's own clock).
func claimWithin(t testing.TB, s Store, owner string, lease time.Duration) *Job {
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

func mustClaimNone(t testing.TB, s Store, owner string) {
	t.Helper()
	j, err := s.Claim(context.Background(), owner, time.Minute)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if j != nil {
		t.Fatalf("Claim by %s = job %s (%s), want none", owner, j.ID, j.Status)
	}
}

func statuses(evs []Event, job string) []Status {
	var out []Status
	for _, e := range evs {
		if job == "" || e.JobID == job {
			out = append(out, e.Status)
		}
	}
	return out
}

func allEvents(t testing.TB, s Store, tenant string) []Event {
	t.Helper()
	evs, err := s.Events(context.Background(), tenant, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestRedisReclaimsEveryJobOfADeadWorkerAtOnce: a worker that died holding
// several jobs leaves them all reclaimable together. XAUTOCLAIM resets the
// idle time of what it moves, so a Claim must move only the entry it runs:
// the others must not wait another idle period.
func TestRedisReclaimsEveryJobOfADeadWorkerAtOnce(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	clk := newClock()
	s, err := NewRedis(ctx, c, &RedisOptions{Prefix: redistest.Prefix(t, c), Now: clk.Now, ReclaimIdle: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	for range n {
		if err := s.Add(ctx, newJob("acme", "t", Queued, clk.Now())); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if j, err := s.Claim(ctx, "dead", 10*time.Second); err != nil || j == nil {
			t.Fatalf("Claim by dead = %v, %v", j, err)
		}
	}
	clk.Add(11 * time.Second) // the dead worker's leases run out
	// Wait until every entry has sat idle long enough to be reclaimed.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		idle := 0
		for _, q := range s.streams() {
			pend, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: q, Group: redisGroup, Start: "-", End: "+", Count: 100}).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pend {
				if p.Idle >= 300*time.Millisecond {
					idle++
				}
			}
		}
		if idle == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d entries idle after 5s", idle, n)
		}
	}
	claimWithin(t, s, "alive", 10*time.Second)
	// The rest are idle as long as the first was: claimable now, no wait.
	for i := 1; i < n; i++ {
		j, err := s.Claim(ctx, "alive", 10*time.Second)
		if err != nil || j == nil {
			t.Fatalf("reclaim %d of %d right after the first = %v, %v; want a job", i+1, n, j, err)
		}
	}
}

// TestSQLitePlans: the statements a job's life runs read jobs and events
// through indexes, and sort no rows of them: a claim walks to the first
// due job (it used to sort every due job, on every claim: a drain of n
// jobs cost n²).
func TestSQLitePlans(t *testing.T) {
	s, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "jobs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range sqlitePrepared {
		if !strings.HasPrefix(q, "SELECT") && !strings.HasPrefix(q, "UPDATE") {
			continue
		}
		n := strings.Count(q, "?")
		if strings.Contains(q, "?1") {
			n = 1 // numbered: one argument
		}
		args := make([]any, n)
		for i := range args {
			args[i] = 1
		}
		rows, err := s.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		type node struct {
			parent int
			detail string
		}
		var plan []node
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, node{parent, detail})
		}
		rows.Close()
		for _, n := range plan {
			if strings.HasPrefix(n.detail, "SCAN job") {
				t.Errorf("%s\nscans a whole table: %v", q, plan)
			}
			if !strings.HasPrefix(n.detail, "USE TEMP B-TREE") {
				continue
			}
			for _, m := range plan {
				if m.parent == n.parent && (strings.HasPrefix(m.detail, "SEARCH job") || strings.HasPrefix(m.detail, "SCAN job")) {
					t.Errorf("%s\nsorts the rows it reads: %v", q, plan)
				}
			}
		}
	}
}
