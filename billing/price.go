package billing

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"
)

// Config is billing's part of toolhub.yaml (prices, budgets, meter).
// Amounts are decimal strings ("0.0025") read exactly into [Micros].
//
//	billing:
//	  currency: USD
//	  cache_price: "0.0001"       # what a tenant pays for a cached or stale answer
//	  prices:
//	    - version: "2026-12"
//	      effective: 2026-12-01T00:00:00Z
//	      entries:
//	        - vendor: doubao
//	          tool: generate_image    # "" or "*": every tool of the vendor
//	          tenant: {per_call: "0.02", per_unit: {images: "0.04"}}
//	          vendor: {per_call: "0.01", tiers: [{up_to: 1000, per_call: "0.01"}, {per_call: "0.008"}]}
//	          estimate: {images: 4}   # max units, for budget reservations
//	  budgets:
//	    - {tenant: acme, period: month, limit: "100"}
//	    - {tenant: acme, vendor: doubao, period: day, limit: "5", soft_percent: 90}
type Config struct {
	Currency   string          `yaml:"currency" json:"currency"`       // "" means USD
	CachePrice Micros          `yaml:"cache_price" json:"cache_price"` // per cached or stale call; vendors get nothing
	Prices     []VersionConfig `yaml:"prices" json:"prices"`
	Budgets    []BudgetRule    `yaml:"budgets" json:"budgets"`
	// SoftPercent is the default soft-limit alert threshold; 0 means 80.
	SoftPercent int `yaml:"soft_percent" json:"soft_percent"`
	// BudgetsFailOpen lets calls through when the budget store (Redis)
	// cannot be reached; false (the default) refuses them.
	BudgetsFailOpen bool `yaml:"budgets_fail_open" json:"budgets_fail_open"`
	// Buffer is the meter's in-memory event buffer; 0 means 65536.
	Buffer int `yaml:"buffer" json:"buffer"`
}

// VersionConfig is one version of the price book, in force from Effective
// until the next version's Effective.
type VersionConfig struct {
	Version    string       `yaml:"version" json:"version"`
	Effective  time.Time    `yaml:"effective" json:"effective"`
	Currency   string       `yaml:"currency" json:"currency"`       // "" means Config.Currency
	CachePrice *Micros      `yaml:"cache_price" json:"cache_price"` // nil means Config.CachePrice
	Entries    []PriceEntry `yaml:"entries" json:"entries"`
}

// PriceEntry prices one vendor tool (or every tool of a vendor).
type PriceEntry struct {
	Vendor string `yaml:"vendor" json:"vendor"`
	Tool   string `yaml:"tool" json:"tool"` // "" or "*": any tool of Vendor
	Tenant Rate   `yaml:"tenant" json:"tenant"`
	Payout Rate   `yaml:"payout" json:"payout"`
	// Estimate is the most units a call may use, for budget reservations
	// (calls is always 1).
	Estimate Units `yaml:"estimate" json:"estimate"`
}

// Rate is a price: per call plus per unit, with optional monthly volume
// tiers. The Nth call of a calendar month (UTC) is priced by the first tier
// with N ≤ UpTo (UpTo 0: no bound); a tier's PerUnit, when set, replaces
// the rate's. Tenant volumes count per tenant, vendor volumes per vendor
// tool across all tenants.
type Rate struct {
	PerCall Micros            `yaml:"per_call" json:"per_call"`
	PerUnit map[string]Micros `yaml:"per_unit" json:"per_unit,omitempty"`
	Tiers   []Tier            `yaml:"tiers" json:"tiers,omitempty"`
}

// Tier is one monthly volume step of a [Rate].
type Tier struct {
	UpTo    int64             `yaml:"up_to" json:"up_to"`
	PerCall Micros            `yaml:"per_call" json:"per_call"`
	PerUnit map[string]Micros `yaml:"per_unit" json:"per_unit,omitempty"`
}

// Cost prices a call that is the n-th (1-based) of its month and used
// units: it returns the per-call price applied and the total.
func (r Rate) Cost(n int64, units Units) (perCall, total Micros) {
	perCall, perUnit := r.PerCall, r.PerUnit
	for _, t := range r.Tiers {
		if t.UpTo == 0 || n <= t.UpTo {
			perCall = t.PerCall
			if t.PerUnit != nil {
				perUnit = t.PerUnit
			}
			break
		}
	}
	total = perCall
	for name, q := range units {
		if name != UnitCalls {
			total += perUnit[name] * Micros(q)
		}
	}
	return perCall, total
}

// Max is the most one call with units can cost at this rate, any tier.
func (r Rate) Max(units Units) Micros {
	_, m := Rate{PerCall: r.PerCall, PerUnit: r.PerUnit}.Cost(0, units)
	for _, t := range r.Tiers {
		pu := t.PerUnit
		if pu == nil {
			pu = r.PerUnit
		}
		_, c := Rate{PerCall: t.PerCall, PerUnit: pu}.Cost(0, units)
		m = max(m, c)
	}
	return m
}

// Price is what [PriceBook.Lookup] finds for one vendor tool at one time.
type Price struct {
	Found      bool // false: no entry; every amount is zero
	Entry      PriceEntry
	Currency   string
	CachePrice Micros
}

// PriceBook holds the versions of the prices, ordered by effective date.
// It is immutable: build a new one to change prices.
type PriceBook struct {
	currency string
	versions []version
}

type version struct {
	name       string
	effective  time.Time
	currency   string
	cachePrice Micros
	entries    map[[2]string]PriceEntry // {vendor, tool}; tool "" for any
}

// NewPriceBook checks cfg and builds its price book.
func NewPriceBook(cfg Config) (*PriceBook, error) {
	b := &PriceBook{currency: cfg.Currency}
	if b.currency == "" {
		b.currency = "USD"
	}
	seen := map[string]bool{}
	for i, vc := range cfg.Prices {
		if vc.Version == "" {
			return nil, fmt.Errorf("billing: prices[%d]: version is required (a name like \"2026-12\")", i)
		}
		if seen[vc.Version] {
			return nil, fmt.Errorf("billing: prices[%d]: version %q appears twice", i, vc.Version)
		}
		seen[vc.Version] = true
		v := version{name: vc.Version, effective: vc.Effective, currency: vc.Currency, cachePrice: cfg.CachePrice, entries: map[[2]string]PriceEntry{}}
		if v.currency == "" {
			v.currency = b.currency
		}
		if vc.CachePrice != nil {
			v.cachePrice = *vc.CachePrice
		}
		for j, e := range vc.Entries {
			if e.Vendor == "" {
				return nil, fmt.Errorf("billing: prices[%d] (version %q): entries[%d]: vendor is required", i, vc.Version, j)
			}
			if e.Tool == "*" {
				e.Tool = ""
			}
			for _, r := range []Rate{e.Tenant, e.Payout} {
				for k, t := range r.Tiers {
					if t.UpTo == 0 && k != len(r.Tiers)-1 || k > 0 && t.UpTo != 0 && t.UpTo <= r.Tiers[k-1].UpTo {
						return nil, fmt.Errorf("billing: prices[%d] (version %q): entries[%d] (%s/%s): tiers must have increasing up_to, only the last without one", i, vc.Version, j, e.Vendor, e.Tool)
					}
				}
			}
			k := [2]string{e.Vendor, e.Tool}
			if _, dup := v.entries[k]; dup {
				return nil, fmt.Errorf("billing: prices[%d] (version %q): %s/%s priced twice", i, vc.Version, e.Vendor, e.Tool)
			}
			v.entries[k] = e
		}
		b.versions = append(b.versions, v)
	}
	slices.SortStableFunc(b.versions, func(x, y version) int { return x.effective.Compare(y.effective) })
	return b, nil
}

// Lookup finds the price of vendor's tool at time at, and the name of the
// price-book version in force ("" when none is). An entry for the exact
// tool wins over the vendor's catch-all.
func (b *PriceBook) Lookup(vendor, tool string, at time.Time) (Price, string) {
	if b == nil {
		return Price{Currency: "USD"}, ""
	}
	i := len(b.versions) - 1
	for i >= 0 && b.versions[i].effective.After(at) {
		i--
	}
	if i < 0 {
		return Price{Currency: b.currency}, ""
	}
	v := &b.versions[i]
	p := Price{Currency: v.currency, CachePrice: v.cachePrice}
	if e, ok := v.entries[[2]string{vendor, tool}]; ok {
		p.Found, p.Entry = true, e
	} else if e, ok := v.entries[[2]string{vendor, ""}]; ok {
		p.Found, p.Entry = true, e
	}
	return p, v.name
}

// PricerOptions configure [NewPricer]. A nil *PricerOptions means the
// defaults.
type PricerOptions struct {
	// Volumes counts the monthly volumes of tiered rates; nil means a
	// [MemoryVolumes] (exact with one hub only). Give every hub the same
	// shared counter (billing/redisvolume) so tier boundaries fall at the
	// configured call number across them. Untiered rates never ask it.
	Volumes VolumeCounter
	// Logger receives one line when the counter starts failing and one
	// when it works again; nil means slog.Default().
	Logger *slog.Logger
}

// Pricer prices events: it asks a [VolumeCounter] for the monthly volume
// of each call priced by a tiered rate (call [Pricer.Seed] at start to
// continue the month from the ledger).
type Pricer struct {
	book    *PriceBook
	vol     VolumeCounter
	log     *slog.Logger
	failing atomic.Bool // the counter's last Next failed
}

// NewPricer returns a Pricer over book (nil: everything is free).
func NewPricer(book *PriceBook, opts *PricerOptions) *Pricer {
	p := &Pricer{book: book}
	if opts != nil {
		p.vol, p.log = opts.Volumes, opts.Logger
	}
	if p.vol == nil {
		p.vol = NewMemoryVolumes()
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	return p
}

// Book returns the price book.
func (p *Pricer) Book() *PriceBook { return p.book }

func monthOf(t time.Time) int {
	t = t.UTC()
	return t.Year()*100 + int(t.Month())
}

// volume is the number of the call in k's month for rate r: 0 (the first
// tier) when r has no tiers, without asking the counter.
func (p *Pricer) volume(ctx context.Context, r Rate, k VolumeKey) int64 {
	if len(r.Tiers) == 0 {
		return 0
	}
	n, err := p.vol.Next(ctx, k)
	if err != nil {
		if !p.failing.Swap(true) {
			p.log.Error("billing: tier volume not counted: calls are priced at the first tier until the counter works again", "key", k.String(), "err", err)
		}
		return 0
	}
	if p.failing.Load() && p.failing.Swap(false) {
		p.log.Info("billing: tier volume counter works again")
	}
	return n
}

// Charge is one priced line.
type Charge struct {
	UnitPrice Micros
	Cost      Micros
	Currency  string
	Version   string
}

// TenantCharge prices what tenant pays for a call answered by vendor/tool
// with outcome. Cached and stale answers cost the cache price; errors,
// timeouts, rejections and queued acceptances cost nothing.
//
// A tiered rate counts the call in the tenant's monthly volume (ctx bounds
// that, when the counter is shared).
func (p *Pricer) TenantCharge(ctx context.Context, tenant, vendor, tool string, at time.Time, outcome Outcome, units Units) Charge {
	pr, ver := p.book.Lookup(vendor, tool, at)
	c := Charge{Currency: pr.Currency, Version: ver}
	switch outcome {
	case OutcomeCached, OutcomeStale:
		c.UnitPrice, c.Cost = pr.CachePrice, pr.CachePrice
	case OutcomeOK, OutcomeFallback:
		if pr.Found {
			r := pr.Entry.Tenant
			n := p.volume(ctx, r, VolumeKey{tenant, vendor, pr.Entry.Tool, monthOf(at)})
			c.UnitPrice, c.Cost = r.Cost(n, units)
		}
	}
	return c
}

// VendorPayout prices what toolhub pays vendor for one attempt: only
// successful attempts are paid (and counted in the vendor tool's monthly
// volume when the payout rate is tiered).
func (p *Pricer) VendorPayout(ctx context.Context, vendor, tool string, at time.Time, outcome Outcome, units Units) Charge {
	pr, ver := p.book.Lookup(vendor, tool, at)
	c := Charge{Currency: pr.Currency, Version: ver}
	if outcome == OutcomeOK && pr.Found {
		r := pr.Entry.Payout
		n := p.volume(ctx, r, VolumeKey{"", vendor, pr.Entry.Tool, monthOf(at)})
		c.UnitPrice, c.Cost = r.Cost(n, units)
	}
	return c
}

// Estimate is the most a tenant can be charged for one call to vendor/tool
// at time at: the highest tier, with the entry's estimated units.
func (p *Pricer) Estimate(vendor, tool string, at time.Time) Micros {
	pr, _ := p.book.Lookup(vendor, tool, at)
	if !pr.Found {
		return max(0, pr.CachePrice)
	}
	return max(pr.Entry.Tenant.Max(pr.Entry.Estimate), pr.CachePrice)
}

// Currency is the price book's default currency (budgets count in it).
func (p *Pricer) Currency() string {
	if p.book == nil {
		return "USD"
	}
	return p.book.currency
}

// Seed gives the counter the month's tier volumes from the ledger (call it
// at start, before traffic; a shared counter keeps the counts it already
// has): tenant volumes from the calls answered by a vendor (rollup calls
// minus rejected, failed and cached: queued acceptances count too, the
// rollup has no column for them), vendor volumes from paid attempts, in
// the month of at. Only tiered rates are seeded.
func (p *Pricer) Seed(ctx context.Context, l Ledger, at time.Time) error {
	at = at.UTC()
	from := time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
	rows, err := l.Rollup(ctx, RollupQuery{Filter: Filter{From: from, To: from.AddDate(0, 1, 0)}, GroupBy: []string{ByTenant, ByVendor, ByTool}})
	if err != nil {
		return fmt.Errorf("billing: seed tier volumes: %w", err)
	}
	counts := map[VolumeKey]int64{}
	m := monthOf(at)
	for _, r := range rows {
		pr, _ := p.book.Lookup(r.Vendor, r.Tool, at)
		if !pr.Found {
			continue
		}
		// Attempt events carry the tenant too: the vendor side sums over tenants.
		if len(pr.Entry.Tenant.Tiers) > 0 {
			counts[VolumeKey{r.Tenant, r.Vendor, pr.Entry.Tool, m}] += r.Calls - r.Rejected - r.Failed - r.Cached
		}
		if len(pr.Entry.Payout.Tiers) > 0 {
			counts[VolumeKey{"", r.Vendor, pr.Entry.Tool, m}] += r.Paid
		}
	}
	for k, n := range counts {
		if n <= 0 {
			delete(counts, k)
		}
	}
	if err := p.vol.Seed(ctx, counts); err != nil {
		return fmt.Errorf("billing: seed tier volumes: %w", err)
	}
	return nil
}
