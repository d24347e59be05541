package hub

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// An attempt's context behaves as context.WithDeadline's, whether or not
// anyone asked for its Done channel before it ended: each case runs
// against both and compares what a caller sees.
func TestAttemptContextActsAsWithDeadline(t *testing.T) {
	errCause := errors.New("caller's cause")
	type seen struct {
		err, cause, childErr error
		done, afterRan       bool
		deadline             time.Duration
	}
	type mk func(parent context.Context, d time.Time) (context.Context, func())
	std := func(parent context.Context, d time.Time) (context.Context, func()) {
		return context.WithDeadline(parent, d)
	}
	ours := func(parent context.Context, d time.Time) (context.Context, func()) {
		c := newAttemptContext(parent, d)
		return c, c.end
	}
	cases := []struct {
		name string
		// run acts on ctx (derived from parent, which cancelParent ends)
		// after watching is set up, or not.
		watch bool
		run   func(cancelParent context.CancelCauseFunc, end func())
	}{
		{"deadline passes, unwatched", false, func(context.CancelCauseFunc, func()) { time.Sleep(2 * time.Second) }},
		{"deadline passes, watched", true, func(context.CancelCauseFunc, func()) { time.Sleep(2 * time.Second) }},
		{"before the deadline", false, func(context.CancelCauseFunc, func()) { time.Sleep(500 * time.Millisecond) }},
		{"parent canceled, unwatched", false, func(p context.CancelCauseFunc, _ func()) { p(errCause) }},
		{"parent canceled, watched", true, func(p context.CancelCauseFunc, _ func()) { p(errCause) }},
		{"ended, unwatched", false, func(_ context.CancelCauseFunc, end func()) { end() }},
		{"ended, watched", true, func(_ context.CancelCauseFunc, end func()) { end() }},
		{"ended then deadline", true, func(_ context.CancelCauseFunc, end func()) { end(); time.Sleep(2 * time.Second) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]seen
			for i, mkCtx := range []mk{std, ours} {
				synctest.Test(t, func(t *testing.T) {
					parent, cancelParent := context.WithCancelCause(context.Background())
					defer cancelParent(nil)
					ctx, end := mkCtx(parent, time.Now().Add(time.Second))
					defer end()
					var s seen
					dl, _ := ctx.Deadline()
					s.deadline = time.Until(dl)
					var child context.Context
					var ran bool
					if tc.watch {
						var cancelChild context.CancelFunc
						child, cancelChild = context.WithCancel(ctx)
						defer cancelChild()
						context.AfterFunc(ctx, func() { ran = true })
					}
					tc.run(cancelParent, end)
					synctest.Wait()
					s.err, s.cause = ctx.Err(), context.Cause(ctx)
					select {
					case <-ctx.Done():
						s.done = true
					default:
					}
					if child != nil {
						s.childErr = child.Err()
					}
					s.afterRan = ran
					got[i] = s
				})
			}
			if got[0] != got[1] {
				t.Errorf("WithDeadline: %+v\nattempt context: %+v", got[0], got[1])
			}
		})
	}
}

// An upstream that never waits on Done leaves nothing armed: its attempt
// costs one allocation.
func TestAttemptContextUnwatchedAllocatesOnce(t *testing.T) {
	parent := context.Background()
	n := testing.AllocsPerRun(100, func() {
		c := newAttemptContext(parent, time.Now().Add(time.Second))
		_ = c.Err()
		c.end()
	})
	if n != 1 {
		t.Fatalf("%v allocations, want 1", n)
	}
}
