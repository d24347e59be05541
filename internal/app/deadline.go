package app

import (
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// attemptTimeout is how long one attempt at a vendor tool may take: its
// class's or vendor's timeout, else the config's default (5s).
func (a *App) attemptTimeout(t *registry.Tool) time.Duration {
	if d := a.timeout(t); d > 0 {
		return d
	}
	if cfg := a.cfg.Load(); cfg != nil && cfg.Timeout > 0 {
		return cfg.Timeout.D()
	}
	return hub.DefaultTimeout
}

// callDeadline is a call's overall deadline when its caller set none: for
// a vendor tool, its class's governance.deadlines entry, else twice its
// attempt timeout (one retry fits); for a capability, the sum over its
// chain (each vendor gets its turn before the stale answer or the queue).
func (a *App) callDeadline(e registry.Entry) time.Duration {
	if e.Tool != nil {
		return a.toolDeadline(e.Tool)
	}
	if e.Capability == nil {
		return 0
	}
	var sum time.Duration
	for _, step := range e.Capability.Chain {
		v, name := step.VendorTool()
		t, ok := a.Catalog.VendorTool(v, name)
		if !ok {
			continue
		}
		sum += a.toolDeadline(t)
	}
	return sum
}

func (a *App) toolDeadline(t *registry.Tool) time.Duration {
	v, _ := a.spec(t.Vendor)
	if class, ok := v.Classes[t.Def.Name]; ok {
		if cfg := a.cfg.Load(); cfg != nil {
			if d, ok := cfg.Governance.Deadlines[class]; ok && d > 0 {
				return d.D()
			}
		}
	}
	return 2 * a.attemptTimeout(t)
}
