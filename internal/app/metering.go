package app

import (
	"context"
	"path/filepath"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/pgledger"
	"github.com/toolhub/toolhub/billing/redisbudget"
	"github.com/toolhub/toolhub/billing/redisvolume"
	"github.com/toolhub/toolhub/billing/sqlledger"
	"github.com/toolhub/toolhub/internal/config"
)

// metering opens the ledger and builds the meter (usage events off the
// call path, spilled to disk when the database is away), the pricer and
// the budgets (tier volumes and budgets shared through Redis when redis is
// set).
func (a *App) metering(ctx context.Context, cfg *config.Config) error {
	book, err := billing.NewPriceBook(cfg.Billing)
	if err != nil {
		return err
	}
	var volumes billing.VolumeCounter // nil: in process
	if a.redis != nil {
		// Tier volumes shared by every hub on this Redis, local while it is away.
		volumes = redisvolume.New(a.redis, &redisvolume.Options{Prefix: cfg.RedisPrefix + "volume:", Logger: a.log})
	}
	pricer := billing.NewPricer(book, &billing.PricerOptions{Volumes: volumes, Logger: a.log})
	if cfg.Postgres != "" {
		a.Ledger, err = pgledger.Open(ctx, cfg.Postgres, &pgledger.Options{Schema: cfg.Schema})
	} else {
		a.Ledger, err = sqlledger.Open(ctx, filepath.Join(cfg.Data, "ledger.db"), nil)
	}
	if err != nil {
		return err
	}
	if err := pricer.Seed(ctx, a.Ledger, time.Now()); err != nil {
		a.log.Warn("billing: tier volumes not seeded from the ledger", "err", err)
	}
	if a.Meter, err = billing.NewMeter(a.Ledger, &billing.MeterOptions{Pricer: pricer,
		SpillDir: filepath.Join(cfg.Data, "spill", "usage"), Buffer: cfg.Billing.Buffer, Logger: a.log}); err != nil {
		return err
	}
	var store billing.BudgetStore // nil: in process
	if a.redis != nil {
		store = redisbudget.New(a.redis, &redisbudget.Options{Prefix: cfg.RedisPrefix + "budget:"})
	}
	a.Budgets, err = billing.NewBudgets(cfg.Billing.Budgets, &billing.BudgetOptions{Pricer: pricer, Store: store,
		SoftPercent: cfg.Billing.SoftPercent, FailOpen: cfg.Billing.BudgetsFailOpen, Logger: a.log})
	if err != nil {
		return err
	}
	return a.seedBudgets(ctx)
}

// seedBudgets gives in-process budget counters what the ledger holds for
// the current day and month (a restart must not let a tenant spend its
// budget again), after writing the meter's buffer and spill to the ledger.
func (a *App) seedBudgets(ctx context.Context) error {
	if err := a.Meter.Flush(ctx); err != nil {
		a.log.Warn("billing: usage events wait in the spill; budgets are seeded without them", "err", err)
	}
	return a.Budgets.Seed(ctx, a.Ledger, time.Now())
}
