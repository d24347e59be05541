package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/breaker"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/hub/retry"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/registry"
)

// limiter is the rate limiter: in process, or Redis (GCRA, shared by every
// instance) that falls back to local limits at rate/instances when Redis
// cannot be reached, and returns to Redis when it answers again.
func (a *App) limiter(cfg *config.Config) (limit.Limiter, error) {
	if cfg.Redis == "" {
		return limit.NewLocal(nil), nil
	}
	opt, err := redis.ParseURL(cfg.Redis)
	if err != nil {
		return nil, fmt.Errorf("redis %q: %v (want redis://host:port/db)", cfg.Redis, err)
	}
	// Two clients. On the call path (limits, budgets, cache, volumes) a
	// dead Redis must cost a call milliseconds, not the client's default
	// dial retries: each has a fallback that takes over. The durable stores
	// (jobs, A2A tasks) have no fallback: a busy machine's slow answer
	// must not fail an enqueue or a job's finish, so they wait and retry.
	durable := *opt
	durable.DialTimeout, durable.ReadTimeout, durable.WriteTimeout = 2*time.Second, 3*time.Second, 3*time.Second
	durable.MaxRetries = 3
	a.redisDurable = redis.NewClient(&durable)
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
	opt.MaxRetries = -1
	opt.DialerRetries = 1 // go-redis retries a failed dial 5 times, 100 ms apart: 0.5 s per call
	a.redis = redis.NewClient(opt)
	mode := limit.FallbackLocal
	if cfg.FailOpen {
		mode = limit.FailOpen
	}
	return limit.NewFallback(limit.NewRedis(a.redis, &limit.RedisOptions{Prefix: cfg.RedisPrefix + "limit:"}), &limit.FallbackOptions{
		Mode: mode, Instances: cfg.Instances, Logger: a.log,
	}), nil
}

func (a *App) governOptions(cfg *config.Config, l limit.Limiter) *govern.Options {
	g := cfg.Governance
	ramp := &breaker.RampOptions{Interval: g.RampInterval.D()}
	return &govern.Options{
		Limiter:      l,
		Logger:       slog.New(a.Decisions), // the decision log, also kept for /ui
		VendorLimits: a.vendorLimits,
		// Retries start only when they can finish inside the call's deadline.
		AttemptTimeout: a.attemptTimeout,
		Retry:          retry.Policy{Max: g.Retry.Max, Base: g.Retry.Base.D(), Cap: g.Retry.Cap.D()},
		Breaker: func(string) *breaker.Options {
			b := g.Breaker
			return &breaker.Options{Window: b.Window.D(), MinCalls: b.MinCalls, FailureRatio: b.FailureRatio,
				ConsecutiveFailures: b.ConsecutiveFailures, CoolDown: b.CoolDown.D(), MaxCoolDown: b.MaxCoolDown.D(),
				Trials: b.Trials, Ramp: ramp, OnStateChange: a.breakerChanged}
		},
		Health: &breaker.HealthOptions{Threshold: g.EjectAfter, Ramp: ramp, OnChange: a.healthChanged},
		ToolBreaker: func(t *registry.Tool) bool {
			v, _ := a.spec(t.Vendor)
			return slices.Contains(v.ToolBreakers, t.Def.Name)
		},
	}
}

// syncProbes starts a health probe for every vendor and stops those of
// vendors that are gone. A probe keeps running (and keeps its ejection
// state) across reloads that do not change it. Called under a.mu.
func (a *App) syncProbes(specs map[string]registry.Vendor) {
	for id := range a.probing {
		if _, ok := specs[id]; !ok {
			a.Gov.StopProbes(id)
			delete(a.probing, id)
		}
	}
	for id, v := range specs {
		if v.Disabled || v.Probe != nil && v.Probe.Disabled {
			if _, ok := a.probing[id]; ok {
				a.Gov.StopProbes(id)
				delete(a.probing, id)
			}
			continue
		}
		key, _ := json.Marshal(v.Probe)
		if a.probing[id] == string(key) {
			continue
		}
		interval := 10 * time.Second
		if v.MCP != nil && v.MCP.Transport == registry.TransportStdio {
			interval = 5 * time.Second
		}
		if v.Probe != nil && v.Probe.Interval > 0 {
			interval = v.Probe.Interval.D()
		}
		a.Gov.StartProbes(a.ctx, id, interval, a.probe(id, v.Probe))
		a.probing[id] = string(key)
	}
}

// probe returns a vendor's health check: the configured tool call, whose
// answer must be no tool error, match the tool's output schema and have the
// expected keys; or an MCP ping. It calls the vendor directly, outside the
// governance, so probes neither spend nor trip the vendor's limits.
func (a *App) probe(vendor string, p *registry.Probe) func(context.Context) error {
	if p == nil || p.Tool == "" {
		return func(ctx context.Context) error {
			if v, ok := a.spec(vendor); ok && v.Kind() == registry.KindA2A {
				return a.A2A.Ping(ctx, vendor) // fetches the agent card
			}
			return a.Manager.Ping(ctx, vendor)
		}
	}
	return func(ctx context.Context) error {
		t, ok := a.Catalog.VendorTool(vendor, p.Tool)
		if !ok {
			return fmt.Errorf("probe: vendor %q has no tool %q", vendor, p.Tool)
		}
		up, ok := a.upstream(vendor)
		if !ok {
			return fmt.Errorf("probe: vendor %q is not managed", vendor)
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		res, err := up.Invoke(ctx, &hub.Call{ID: hub.NewCallID(), Tenant: "toolhub-probe", Name: t.Catalog, Tool: t, Arguments: p.Args})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("probe: %s reported a tool error: %s", p.Tool, hub.TextOf(res))
		}
		if err := t.ValidateOutput(res.Structured); err != nil {
			return fmt.Errorf("probe: %s: result does not match its output schema: %v", p.Tool, err)
		}
		m, _ := res.Structured.(map[string]any)
		for _, k := range p.Expect {
			if _, ok := m[k]; !ok {
				return fmt.Errorf("probe: %s: result lacks %q", p.Tool, k)
			}
		}
		return nil
	}
}
