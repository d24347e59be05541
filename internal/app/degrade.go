package app

import (
	"context"
	"path/filepath"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/internal/config"
)

// degradation builds the graceful-degradation parts: the result cache, the
// job queue, the capability modes and the chain router. With redis set the
// cache and the queue are shared by every instance.
func (a *App) degradation(ctx context.Context, cfg *config.Config) error {
	var cstore cache.Cache // nil: in-process LRU
	var jstore jobs.Store
	var err error
	if a.redis != nil {
		cstore = cache.NewRedis(a.redis, &cache.RedisOptions{Prefix: cfg.RedisPrefix + "cache:"})
		jstore, err = jobs.NewRedis(ctx, a.redisDurable, &jobs.RedisOptions{Prefix: cfg.RedisPrefix + "jobs:"})
	} else {
		var js *jobs.SQLite
		if js, err = jobs.OpenSQLite(ctx, filepath.Join(cfg.Data, "jobs.db"), nil); err == nil {
			jstore, a.jobsDB = js, js.DB()
		}
	}
	if err != nil {
		return err
	}
	a.Jobs = jobs.NewQueue(jstore, &jobs.Options{ResultTTL: cfg.Jobs.ResultTTL.D()})
	a.Cache = cache.New(&cache.Options{Cache: cstore, Config: cfg.Cache, Logger: a.log,
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
