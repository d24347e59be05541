package app

import (
	"time"

	"github.com/toolhub/toolhub/hub/breaker"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/internal/config"
)

// jobPool runs the queued jobs: each until its deadline (the capability's
// queue.deadline, else jobs.deadline, else 15m); a job no vendor can take
// waits until a vendor can take traffic again ([App.wakeJobs]).
func (a *App) jobPool(cfg *config.Config) *jobs.Pool {
	return &jobs.Pool{Store: a.Jobs, Run: a.tracedJob(a.Gateway.Call), Concurrency: cfg.Jobs.Workers, MaxAttempts: cfg.Jobs.MaxAttempts,
		ResultTTL: cfg.Jobs.ResultTTL.D(), Lease: cfg.Jobs.Lease.D(), Logger: a.log, Deadline: a.jobDeadline}
}

// jobDeadline is how long a job of tool (a capability or vendor tool) lives.
func (a *App) jobDeadline(tool string) time.Duration {
	cfg := a.cfg.Load()
	if cfg == nil {
		return 0
	}
	if cc, ok := cfg.Fallback.Capabilities[tool]; ok && cc.QueueDeadline > 0 {
		return cc.QueueDeadline.D()
	}
	return cfg.Jobs.Deadline.D()
}

// vendorBack is called on every breaker change and health change: when a
// vendor can take traffic again (a closed breaker, a re-admission by a
// probe), the jobs waiting for a vendor are woken, here
// and on every instance sharing the queue. It never blocks the breaker.
func (a *App) vendorBack(halfOpenOrClosed bool) {
	if !halfOpenOrClosed {
		return
	}
	select {
	case a.wakeKick <- struct{}{}:
	default: // a wake is pending already
	}
}

// breakerChanged wakes the waiting jobs when a breaker closes, or turns
// half-open on evidence that its vendor answers again (a probe or a ping
// succeeded: its trial calls are likely to pass, and the waiting jobs are
// the callers to make them). A breaker half-open at the end of its
// cool-down, or for a job's own trial, does not wake them: its few trial
// calls are taken by whoever comes, and a wake of every job at each such
// trial would have them all retry at once, then all sleep.
func (a *App) breakerChanged(c breaker.Change) {
	a.vendorBack(c.To == breaker.Closed || c.To == breaker.HalfOpen && c.Evidence)
}

func (a *App) healthChanged(c breaker.HealthChange) { a.vendorBack(!c.Ejected) }

// wakeLoop wakes the waiting jobs once per burst of vendor recoveries.
func (a *App) wakeLoop() {
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-a.wakeKick:
		}
		if a.pool == nil {
			continue
		}
		if n, err := a.pool.Wake(a.ctx); err != nil && a.ctx.Err() == nil {
			a.log.Warn("jobs: waking the jobs that wait for a vendor failed; they look again by themselves within 2s", "err", err)
		} else if n > 0 {
			a.log.Info("jobs: a vendor can take traffic again; woke the jobs waiting for one", "jobs", n)
		}
	}
}
