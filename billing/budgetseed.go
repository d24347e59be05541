package billing

import (
	"context"
	"fmt"
	"time"
)

// SetRules replaces the budget rules (a config reload). Counters are kept:
// a rule for the same tenant, vendor and period keeps counting what was
// spent. A rule new to a tenant starts from zero until [Budgets.Seed]
// gives it what the ledger holds. On error nothing changes.
func (b *Budgets) SetRules(rules []BudgetRule) error {
	checked, err := checkRules(rules)
	if err != nil {
		return err
	}
	b.rules.Store(&checked)
	return nil
}

// Seed gives the in-process counters of the current day and month (at)
// what the ledger says each tenant was charged in them, so a restarted hub
// does not let a tenant spend its budget again. A counter already counting
// keeps its count. Shared stores (Redis) keep their counters across
// restarts of a hub and are not seeded. Events still in the meter's buffer
// or spill are not in the ledger yet: flush the meter first.
func (b *Budgets) Seed(ctx context.Context, l Ledger, at time.Time) error {
	local, ok := b.opts.Store.(*LocalBudgetStore)
	if !ok {
		return nil
	}
	at = at.UTC()
	cur := b.opts.Pricer.Currency()
	seed := map[string]Line{}
	amounts := map[string]Micros{}
	for _, period := range []string{PeriodDay, PeriodMonth} {
		_, end := periodOf(period, at)
		from := end.AddDate(0, -1, 0)
		if period == PeriodDay {
			from = end.AddDate(0, 0, -1)
		}
		rows, err := l.Rollup(ctx, RollupQuery{Filter: Filter{From: from, To: end}, GroupBy: []string{ByTenant, ByVendor}})
		if err != nil {
			return fmt.Errorf("billing: seed budgets from the ledger: %w", err)
		}
		for _, r := range rows {
			if r.TenantCost <= 0 || r.Currency != "" && r.Currency != cur {
				continue
			}
			for _, bl := range b.lines(r.Tenant, r.Vendor, at) {
				if bl.rule.Period != period {
					continue
				}
				seed[bl.Key] = bl.Line
				amounts[bl.Key] += r.TenantCost
			}
		}
	}
	local.seed(seed, amounts)
	return nil
}

// seed sets the counters that hold nothing yet.
func (s *LocalBudgetStore) seed(lines map[string]Line, amounts map[string]Micros) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for key, l := range lines {
		s.get(key, now) // drops an expired counter
		if _, ok := s.m[key]; !ok {
			s.m[key] = localCounter{amounts[key], now.Add(l.TTL)}
		}
	}
}
