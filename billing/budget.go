package billing

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/hub"
)

// Budget periods.
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// BudgetRule is a hard spending limit for a tenant, or a tenant on one
// vendor, per calendar day or month (UTC), in the price book's currency.
type BudgetRule struct {
	Tenant string `yaml:"tenant" json:"tenant"` // required; "*" gives every tenant its own budget
	Vendor string `yaml:"vendor" json:"vendor"` // "": all vendors
	Period string `yaml:"period" json:"period"` // day or month
	Limit  Micros `yaml:"limit" json:"limit"`
	// SoftPercent alerts (log + counter) when spending crosses this share
	// of Limit; 0 means the config's default (80).
	SoftPercent int `yaml:"soft_percent" json:"soft_percent"`
}

// Line is one budget counter a reservation touches.
type Line struct {
	Key   string        // e.g. "budget:{acme}:*:month:2026-12"
	Limit Micros        // hard limit
	TTL   time.Duration // keep the counter this long (past its period)
}

// BudgetStore keeps budget counters. [LocalBudgetStore] is in-process; the
// redisbudget package shares counters between hubs. budgettest holds the
// contract both pass.
type BudgetStore interface {
	// Reserve adds amount to every line, atomically, unless that would
	// take one past its Limit: then nothing changes and ok is false.
	// spent is each line's spending after (or, refused, before) the call.
	Reserve(ctx context.Context, lines []Line, amount Micros) (spent []Micros, ok bool, err error)
	// Adjust adds delta (negative to release) to every line, unchecked.
	Adjust(ctx context.Context, lines []Line, delta Micros) error
	// Spent returns a counter's spending (0 if unknown).
	Spent(ctx context.Context, key string) (Micros, error)
}

// LocalBudgetStore keeps counters in memory, under one mutex.
type LocalBudgetStore struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]localCounter
}

type localCounter struct {
	spent   Micros
	expires time.Time
}

var _ BudgetStore = (*LocalBudgetStore)(nil)

// NewLocalBudgetStore returns an empty store; now is its clock (nil: time.Now).
func NewLocalBudgetStore(now func() time.Time) *LocalBudgetStore {
	if now == nil {
		now = time.Now
	}
	return &LocalBudgetStore{now: now, m: map[string]localCounter{}}
}

func (s *LocalBudgetStore) get(key string, now time.Time) Micros {
	c, ok := s.m[key]
	if !ok {
		return 0
	}
	if now.After(c.expires) {
		delete(s.m, key)
		return 0
	}
	return c.spent
}

// Reserve implements [BudgetStore].
func (s *LocalBudgetStore) Reserve(_ context.Context, lines []Line, amount Micros) ([]Micros, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	spent := make([]Micros, len(lines))
	ok := true
	for i, l := range lines {
		spent[i] = s.get(l.Key, now)
		if amount > 0 && spent[i]+amount > l.Limit {
			ok = false
		}
	}
	if !ok {
		return spent, false, nil
	}
	for i, l := range lines {
		spent[i] += amount
		s.m[l.Key] = localCounter{spent[i], now.Add(l.TTL)}
	}
	return spent, true, nil
}

// Adjust implements [BudgetStore].
func (s *LocalBudgetStore) Adjust(_ context.Context, lines []Line, delta Micros) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, l := range lines {
		s.m[l.Key] = localCounter{s.get(l.Key, now) + delta, now.Add(l.TTL)}
	}
	return nil
}

// Spent implements [BudgetStore].
func (s *LocalBudgetStore) Spent(_ context.Context, key string) (Micros, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(key, s.now()), nil
}

// BudgetOptions configure [NewBudgets]. A nil *BudgetOptions means defaults.
type BudgetOptions struct {
	Pricer      *Pricer      // estimates and real costs; nil: everything is free
	Store       BudgetStore  // nil: a LocalBudgetStore
	SoftPercent int          // default soft threshold; 0 means 80
	Logger      *slog.Logger // nil: slog.Default()
	Now         func() time.Time
	// FailOpen lets calls through (logged) when the store cannot be
	// reached; the default refuses them with budget_exceeded, so a budget
	// really stops spending.
	FailOpen bool
	// Meter, when set, records refused calls itself. Leave it nil when the
	// meter's middleware is installed in Outer: it records them already.
	Meter *Meter
}

// Budgets enforces [BudgetRule]s on calls.
type Budgets struct {
	rules  atomic.Pointer[[]BudgetRule] // replaced whole by SetRules
	opts   BudgetOptions
	log    *slog.Logger
	soft   atomic.Int64
	refuse atomic.Int64
}

// BudgetStats counts budget decisions.
type BudgetStats struct {
	SoftAlerts int64 // reservations that crossed a soft threshold
	Refused    int64 // calls refused with budget_exceeded
}

// NewBudgets checks rules and returns their enforcer.
func NewBudgets(rules []BudgetRule, opts *BudgetOptions) (*Budgets, error) {
	b := &Budgets{}
	if opts != nil {
		b.opts = *opts
	}
	if b.opts.Pricer == nil {
		b.opts.Pricer = NewPricer(nil, nil)
	}
	if b.opts.Now == nil {
		b.opts.Now = time.Now
	}
	if b.opts.Store == nil {
		b.opts.Store = NewLocalBudgetStore(b.opts.Now)
	}
	if b.opts.SoftPercent <= 0 {
		b.opts.SoftPercent = 80
	}
	b.log = b.opts.Logger
	if b.log == nil {
		b.log = slog.Default()
	}
	if err := b.SetRules(rules); err != nil {
		return nil, err
	}
	return b, nil
}

// checkRules checks budget rules and returns a copy of them.
func checkRules(rules []BudgetRule) ([]BudgetRule, error) {
	for i, r := range rules {
		if r.Tenant == "" {
			return nil, fmt.Errorf("billing: budgets[%d]: tenant is required (\"*\" for every tenant)", i)
		}
		if r.Period != PeriodDay && r.Period != PeriodMonth {
			return nil, fmt.Errorf("billing: budgets[%d] (tenant %q): period %q: want day or month", i, r.Tenant, r.Period)
		}
		if r.Limit < 0 || r.SoftPercent < 0 || r.SoftPercent > 100 {
			return nil, fmt.Errorf("billing: budgets[%d] (tenant %q): limit must be ≥ 0 and soft_percent in 0..100", i, r.Tenant)
		}
		if strings.ContainsAny(r.Tenant+r.Vendor, "{}") {
			return nil, fmt.Errorf("billing: budgets[%d]: tenant and vendor may not contain { or }", i)
		}
	}
	return slices.Clone(rules), nil
}

// Stats returns the budget counters.
func (b *Budgets) Stats() BudgetStats {
	return BudgetStats{SoftAlerts: b.soft.Load(), Refused: b.refuse.Load()}
}

// periodOf returns the period's id and end.
func periodOf(period string, at time.Time) (string, time.Time) {
	at = at.UTC()
	if period == PeriodDay {
		d := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
		return d.Format("2006-01-02"), d.AddDate(0, 0, 1)
	}
	m := time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
	return m.Format("2006-01"), m.AddDate(0, 1, 0)
}

type budgetLine struct {
	Line
	rule BudgetRule
}

// lines returns the counters a call by tenant to vendor touches at time at.
func (b *Budgets) lines(tenant, vendor string, at time.Time) []budgetLine {
	var out []budgetLine
	for _, r := range *b.rules.Load() {
		if r.Tenant != "*" && r.Tenant != tenant || r.Vendor != "" && r.Vendor != vendor {
			continue
		}
		id, end := periodOf(r.Period, at)
		v := r.Vendor
		if v == "" {
			v = "*"
		}
		out = append(out, budgetLine{Line{
			Key:   "budget:{" + tenant + "}:" + v + ":" + r.Period + ":" + id,
			Limit: r.Limit,
			TTL:   end.Sub(at) + 24*time.Hour,
		}, r})
	}
	return out
}

func plain(ls []budgetLine) []Line {
	out := make([]Line, len(ls))
	for i, l := range ls {
		out[i] = l.Line
	}
	return out
}

// Spent returns what tenant spent (reservations included) in the period
// of a rule at time at; vendor "" is the tenant-wide counter.
func (b *Budgets) Spent(ctx context.Context, tenant, vendor, period string, at time.Time) (Micros, error) {
	id, _ := periodOf(period, at)
	v := vendor
	if v == "" {
		v = "*"
	}
	return b.opts.Store.Spent(ctx, "budget:{"+tenant+"}:"+v+":"+period+":"+id)
}

// estimate returns the vendor to reserve against and the most the call
// can cost: a vendor tool's estimate, or a capability's highest along its
// chain (reserved against the primary vendor).
func (b *Budgets) estimate(c *hub.Call, at time.Time) (string, Micros) {
	if c.Tool != nil && c.Capability == nil {
		return c.Tool.Vendor, b.opts.Pricer.Estimate(c.Tool.Vendor, c.Tool.Name(), at)
	}
	if c.Capability == nil {
		return "", 0
	}
	var primary string
	var most Micros
	for i, st := range c.Capability.Chain {
		v, t, _ := strings.Cut(st.Tool, "/")
		if i == 0 {
			primary = v
		}
		most = max(most, b.opts.Pricer.Estimate(v, t, at))
	}
	return primary, most
}

// Middleware enforces the budgets (install it in [hub.Options].Call): it
// reserves the call's estimated maximum cost, refuses with
// budget_exceeded when a hard budget would be passed, and settles to the
// real cost after the call. The real cost is the tenant charge the meter
// records for the call.
func (b *Budgets) Middleware() hub.Middleware {
	return func(next hub.Invoker) hub.Invoker {
		return hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			at := c.Start
			if at.IsZero() {
				at = b.opts.Now()
			}
			vendor, est := b.estimate(c, at)
			reserved := b.lines(c.Tenant, vendor, at)
			if len(reserved) == 0 {
				return next.Invoke(ctx, c)
			}
			spent, ok, err := b.opts.Store.Reserve(ctx, plain(reserved), est)
			if err != nil && b.opts.FailOpen {
				b.log.Error("budget store unavailable: call let through (fail open)", "tenant", c.Tenant, "call_id", c.ID, "err", err)
				return next.Invoke(ctx, c)
			}
			if err != nil {
				// Fail closed: a budget that cannot be checked stops spending.
				return nil, &hub.Error{Code: hub.CodeBudgetExceeded, Message: "budget store unavailable: " + err.Error() + "; retry later", Err: err}
			}
			if !ok {
				b.refuse.Add(1)
				for i, l := range reserved {
					if spent[i]+est > l.Limit {
						scope := "tenant " + c.Tenant
						if l.rule.Vendor != "" {
							scope += " on vendor " + l.rule.Vendor
						}
						e := &hub.Error{Code: hub.CodeBudgetExceeded, Vendor: l.rule.Vendor, Message: fmt.Sprintf(
							"%s: %s budget %s %s: %s spent, this call may cost up to %s; raise the budget or wait for the next %s",
							scope, l.rule.Period, l.Limit, b.opts.Pricer.Currency(), spent[i], est, l.rule.Period),
							Details: map[string]any{"period": l.rule.Period, "limit": l.Limit.String(), "spent": spent[i].String(), "estimate": est.String()}}
						if b.opts.Meter != nil {
							b.opts.Meter.recordCall(ctx, c, nil, e, &callNote{charged: true}, false)
						}
						return nil, e
					}
				}
			}
			for i, l := range reserved {
				b.checkSoft(c.Tenant, l, spent[i]-est, spent[i])
			}
			r, err := next.Invoke(ctx, c)
			f := CallFacts(c, r, err)
			ch := b.opts.Pricer.TenantCharge(context.WithoutCancel(ctx), c.Tenant, f.Vendor, f.Tool, at, f.Outcome, f.Units)
			if note, _ := ctx.Value(noteKey{}).(*callNote); note != nil {
				note.charged, note.charge = true, ch
			}
			// Settle: release the reservation, charge the real cost to the
			// lines of the vendor that answered.
			actual := reserved
			if f.Vendor != vendor {
				actual = b.lines(c.Tenant, f.Vendor, at)
			}
			sctx := context.WithoutCancel(ctx)
			if f.Vendor == vendor {
				if err := b.opts.Store.Adjust(sctx, plain(reserved), ch.Cost-est); err != nil {
					b.log.Error("budget settle failed", "tenant", c.Tenant, "call_id", c.ID, "err", err)
				}
			} else {
				if err := b.opts.Store.Adjust(sctx, plain(reserved), -est); err != nil {
					b.log.Error("budget settle failed", "tenant", c.Tenant, "call_id", c.ID, "err", err)
				}
				if err := b.opts.Store.Adjust(sctx, plain(actual), ch.Cost); err != nil {
					b.log.Error("budget settle failed", "tenant", c.Tenant, "call_id", c.ID, "err", err)
				}
			}
			return r, err
		})
	}
}

func (b *Budgets) checkSoft(tenant string, l budgetLine, before, after Micros) {
	pct := l.rule.SoftPercent
	if pct == 0 {
		pct = b.opts.SoftPercent
	}
	th := l.Limit * Micros(pct) / 100
	if before < th && after >= th {
		b.soft.Add(1)
		b.log.Warn("budget soft limit crossed", "tenant", tenant, "vendor", l.rule.Vendor, "period", l.rule.Period,
			"limit", l.Limit.String(), "spent", after.String(), "soft_percent", pct)
	}
}
