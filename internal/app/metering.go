package app

import (
	"context"
	"path/filepath"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/internal/backend"
	"github.com/toolhub/toolhub/internal/config"
)

// metering builds, over the stores' ledger, tier volumes and budget
// store, the meter (usage events off the call path, spilled to disk when
// the database is away), the pricer and the budgets.
func (a *App) metering(ctx context.Context, cfg *config.Config) error {
	book, err := billing.NewPriceBook(cfg.Billing)
	if err != nil {
		return err
	}
	pricer := billing.NewPricer(book, &billing.PricerOptions{Volumes: a.stores.Volumes, Logger: a.log})
	if err := pricer.Seed(ctx, a.Ledger, time.Now()); err != nil {
		a.log.Warn("billing: tier volumes not seeded from the ledger", "err", err)
	}
	if a.Meter, err = billing.NewMeter(a.Ledger, &billing.MeterOptions{Pricer: pricer,
		SpillDir: filepath.Join(cfg.Data, "spill", "usage"), Buffer: cfg.Billing.Buffer, Logger: a.log,
		Sync: billing.SyncPolicy(cfg.Meter.Sync)}); err != nil {
		return err
	}
	// The meter flushes into the ledger: it closes before the stores.
	a.cleanups.AddCloser(a.Meter)
	a.Budgets, err = billing.NewBudgets(cfg.Billing.Budgets, &billing.BudgetOptions{Pricer: pricer, Store: a.stores.Budgets,
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
	err := a.Budgets.Seed(ctx, a.Ledger, time.Now())
	if backend.IsAway(err) {
		a.log.Warn("billing: budgets are not seeded from the ledger: postgres is away; they count from zero", "err", err)
		return nil
	}
	return err
}
