package app

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/toolhub/toolhub/billing"
)

// BudgetView is one budget counter with what was spent in its current
// period (GET /v1/admin/budgets; the dashboard's budgets panel).
type BudgetView struct {
	Tenant   string         `json:"tenant"`
	Vendor   string         `json:"vendor,omitempty"` // "": all vendors
	Period   string         `json:"period"`           // day or month
	PeriodID string         `json:"period_id"`        // 2026-12-03 or 2026-12
	Limit    billing.Micros `json:"limit"`
	Spent    billing.Micros `json:"spent"` // reservations of calls in flight included
	Currency string         `json:"currency,omitempty"`
	Error    string         `json:"error,omitempty"` // the counter could not be read (e.g. Redis down)
}

// budgetsHandler lists every budget rule's counter for the current
// period: a rule for "*" once per configured tenant.
func (a *App) budgetsHandler(w http.ResponseWriter, r *http.Request) {
	cfg := a.cfg.Load()
	now := time.Now().UTC()
	out := []BudgetView{}
	var tenants []string
	for _, t := range cfg.Tenants {
		tenants = append(tenants, t.ID)
	}
	slices.Sort(tenants)
	for _, rule := range cfg.Billing.Budgets {
		ts := []string{rule.Tenant}
		if rule.Tenant == "*" {
			ts = tenants
		}
		for _, t := range ts {
			v := BudgetView{Tenant: t, Vendor: rule.Vendor, Period: rule.Period, Limit: rule.Limit, Currency: cfg.Billing.Currency}
			v.PeriodID = now.Format("2006-01")
			if rule.Period == billing.PeriodDay {
				v.PeriodID = now.Format("2006-01-02")
			}
			spent, err := a.Budgets.Spent(r.Context(), t, rule.Vendor, rule.Period, now)
			if err != nil {
				v.Error = "spending unknown: the budget store did not answer"
				a.log.Warn("budgets: reading a counter failed", "tenant", t, "err", err)
			}
			v.Spent = spent
			out = append(out, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{"budgets": out})
}
