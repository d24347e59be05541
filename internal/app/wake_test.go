package app

import (
	"testing"

	"github.com/toolhub/toolhub/hub/breaker"
)

// TestBreakerChangeWakesJobs: the waiting jobs are woken when a breaker
// closes, and when it turns half-open on evidence that its vendor answers
// again (a probe or a ping: the jobs are the callers to make its trials);
// not when it turns half-open at the end of a cool-down or for a job's
// own trial, nor when it opens (a wake of every job then would have them
// all retry at once).
func TestBreakerChangeWakesJobs(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    breaker.Change
		want bool
	}{
		{"closed", breaker.Change{From: breaker.HalfOpen, To: breaker.Closed}, true},
		{"half-open on evidence", breaker.Change{From: breaker.Open, To: breaker.HalfOpen, Evidence: true}, true},
		{"half-open after the cool-down", breaker.Change{From: breaker.Open, To: breaker.HalfOpen}, false},
		{"open", breaker.Change{From: breaker.Closed, To: breaker.Open}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &App{wakeKick: make(chan struct{}, 1)}
			a.breakerChanged(tc.c)
			if got := len(a.wakeKick) == 1; got != tc.want {
				t.Errorf("woke the jobs: %v, want %v", got, tc.want)
			}
		})
	}
}
