package app

import (
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/internal/config"
)

// degradation builds the graceful-degradation parts: the result cache, the
// job queue, the capability modes and the chain router, over the stores'
// cache and job store (shared by every instance when they are in Redis).
func (a *App) degradation(cfg *config.Config) error {
	// The queue does not own the job store: the stores close it.
	a.Jobs = jobs.NewQueue(a.stores.Jobs, &jobs.Options{ResultTTL: cfg.Jobs.ResultTTL.D()})
	a.Cache = cache.New(&cache.Options{Cache: a.stores.Cache, Config: cfg.Cache, Logger: a.log,
		DataLevel: func(c *hub.Call) int { return c.DataLevel }})
	a.Modes = fallback.NewModes(&fallback.ModesOptions{
		Config:     cfg.Fallback,
		Registerer: a.metrics,
		Capabilities: func() []string {
			var names []string
			for _, c := range a.Catalog.Capabilities() {
				names = append(names, c.Name)
			}
			return names
		},
		OnChange: func(ch fallback.Change) {
			a.log.Warn("capability mode changed", "capability", ch.Capability, "from", ch.From, "to", ch.To, "reason", ch.Reason)
		},
	})
	a.Router = fallback.New(&fallback.Options{Config: cfg.Fallback, Modes: a.Modes, Stale: a.Cache.LastKnownGood, Enqueuer: a.enqueuer(a.Jobs), Parker: a.Jobs})
	return nil
}
