package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/breaker"
	"github.com/toolhub/toolhub/hub/govern"
	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/hub/retry"
	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/registry"
)

func (a *App) governOptions(cfg *config.Config, l limit.Limiter) *govern.Options {
	g := cfg.Governance
	ramp := &breaker.RampOptions{Interval: g.RampInterval.D(), Floor: g.RampFloor.D()}
	if g.RampFloor == 0 {
		ramp.Floor = 10 * time.Millisecond
	}
	return &govern.Options{
		Limiter: l,
		Logger:  slog.New(a.Decisions), // the decision log, also kept for /ui
		// Lines are encoded and written off the call path (/ui flushes
		// them first; App.Close writes the last).
		LogQueue:     govern.DefaultLogQueue,
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
		if v.Probe == nil || v.Probe.Tool == "" {
			// The probe is a ping: also pinged while jobs wait for it.
			a.Gov.StartPingProbes(a.ctx, id, interval, a.probe(id, v.Probe))
		} else {
			a.Gov.StartProbes(a.ctx, id, interval, a.probe(id, v.Probe))
		}
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
