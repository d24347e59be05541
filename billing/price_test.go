package billing_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/toolhub/toolhub/billing"
)

func TestParseMicros(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want billing.Micros
		err  bool
	}{
		{"0.0025", 2500, false}, {"12", 12_000_000, false}, {"-1.5", -1_500_000, false}, {".5", 500_000, false},
		{"0.000001", 1, false}, {"0.0000001", 0, true}, {"abc", 0, true}, {"", 0, true}, {"1.-2", 0, true}, {"1e3", 0, true},
	} {
		got, err := billing.ParseMicros(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseMicros(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	if s := billing.Micros(-1_500_001).String(); s != "-1.500001" {
		t.Errorf("String = %q", s)
	}
}

const configYAML = `
currency: USD
cache_price: "0.0001"
soft_percent: 75
prices:
  - version: "2026-12"
    effective: 2026-12-01T00:00:00Z
    entries:
      - vendor: doubao
        tool: generate_image
        tenant: {per_call: "0.03", per_unit: {images: "0.04"}}
        payout:
          per_call: "0.01"
          tiers:
            - {up_to: 2, per_call: "0.01"}
            - {up_to: 4, per_call: "0.008"}
            - {per_call: "0.005", per_unit: {images: "0.001"}}
        estimate: {images: 4}
  - version: "2026-11"
    effective: 2026-11-01T00:00:00Z
    entries:
      - vendor: doubao
        tool: "*"
        tenant: {per_call: "0.02"}
budgets:
  - {tenant: acme, period: month, limit: "100"}
  - {tenant: acme, vendor: doubao, period: day, limit: "5", soft_percent: 90}
`

func loadConfig(t *testing.T) billing.Config {
	t.Helper()
	var cfg billing.Config
	if err := yaml.Unmarshal([]byte(configYAML), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestConfigFromYAML(t *testing.T) {
	cfg := loadConfig(t)
	if cfg.CachePrice != 100 || cfg.SoftPercent != 75 || len(cfg.Budgets) != 2 || cfg.Budgets[1].Limit != 5_000_000 {
		t.Fatalf("config = %+v", cfg)
	}
	if _, err := billing.NewBudgets(cfg.Budgets, nil); err != nil {
		t.Fatal(err)
	}
	// Unquoted YAML numbers are read exactly too.
	var c2 billing.Config
	if err := yaml.Unmarshal([]byte("cache_price: 0.1\nbudgets: [{tenant: a, period: day, limit: 100}]\n"), &c2); err != nil {
		t.Fatal(err)
	}
	if c2.CachePrice != 100_000 || c2.Budgets[0].Limit != 100_000_000 {
		t.Errorf("unquoted: %+v", c2)
	}
}

func TestPriceBookVersionsByEffectiveDate(t *testing.T) {
	b, err := billing.NewPriceBook(loadConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name        string
		tool        string
		at          time.Time
		wantVersion string
		wantFound   bool
		wantPerCall billing.Micros
	}{
		{"before any version", "generate_image", time.Date(2026, 10, 31, 23, 59, 59, 0, time.UTC), "", false, 0},
		{"november, catch-all", "generate_image", time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC), "2026-11", true, 20_000},
		{"november, other tool", "edit_image", time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC), "2026-11", true, 20_000},
		{"december starts exactly at effective", "generate_image", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), "2026-12", true, 30_000},
		{"december, tool not priced", "edit_image", time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), "2026-12", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, v := b.Lookup("doubao", tt.tool, tt.at)
			if v != tt.wantVersion || p.Found != tt.wantFound || p.Entry.Tenant.PerCall != tt.wantPerCall {
				t.Errorf("Lookup = %+v, %q; want version %q found %v per call %v", p, v, tt.wantVersion, tt.wantFound, tt.wantPerCall)
			}
		})
	}
}

func TestTiersAndCacheRule(t *testing.T) {
	b, err := billing.NewPriceBook(loadConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	p := billing.NewPricer(b, nil)
	dec := time.Date(2026, 12, 10, 0, 0, 0, 0, time.UTC)
	units := billing.Units{"calls": 1, "images": 2}
	var got []billing.Micros
	for range 6 {
		got = append(got, p.VendorPayout(t.Context(), "doubao", "generate_image", dec, billing.OutcomeOK, units).Cost)
	}
	// Tiers: calls 1-2 at 0.01, 3-4 at 0.008, then 0.005 + 0.001 per image.
	want := []billing.Micros{10_000, 10_000, 8_000, 8_000, 7_000, 7_000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("payouts by volume (-want +got):\n%s", diff)
	}
	// A new month starts the tiers again.
	if c := p.VendorPayout(t.Context(), "doubao", "generate_image", dec.AddDate(0, 1, 0), billing.OutcomeOK, units); c.Cost != 10_000 {
		t.Errorf("first payout of January = %v", c.Cost)
	}
	// Failed attempts are not paid.
	if c := p.VendorPayout(t.Context(), "doubao", "generate_image", dec, billing.OutcomeTimeout, units); c.Cost != 0 {
		t.Errorf("timeout paid %v", c.Cost)
	}
	// Tenants: 0.03 + 2 × 0.04; cached and stale pay the cache price, errors nothing.
	for _, tt := range []struct {
		outcome billing.Outcome
		want    billing.Micros
	}{
		{billing.OutcomeOK, 110_000}, {billing.OutcomeFallback, 110_000}, {billing.OutcomeCached, 100}, {billing.OutcomeStale, 100},
		{billing.OutcomeError, 0}, {billing.OutcomeRejected, 0}, {billing.OutcomeQueued, 0},
	} {
		if c := p.TenantCharge(t.Context(), "acme", "doubao", "generate_image", dec, tt.outcome, units); c.Cost != tt.want || c.Version != "2026-12" || c.Currency != "USD" {
			t.Errorf("tenant charge %s = %+v, want %v", tt.outcome, c, tt.want)
		}
	}
	// Estimate: the highest tenant price with the estimated units.
	if e := p.Estimate("doubao", "generate_image", dec); e != 30_000+4*40_000 {
		t.Errorf("estimate = %v", e)
	}
}

func TestPriceBookRefusesBadConfig(t *testing.T) {
	for name, cfg := range map[string]billing.Config{
		"no version":    {Prices: []billing.VersionConfig{{}}},
		"twice":         {Prices: []billing.VersionConfig{{Version: "a"}, {Version: "a"}}},
		"no vendor":     {Prices: []billing.VersionConfig{{Version: "a", Entries: []billing.PriceEntry{{}}}}},
		"tiers order":   {Prices: []billing.VersionConfig{{Version: "a", Entries: []billing.PriceEntry{{Vendor: "v", Tenant: billing.Rate{Tiers: []billing.Tier{{UpTo: 5}, {UpTo: 3}}}}}}}},
		"open tier 1st": {Prices: []billing.VersionConfig{{Version: "a", Entries: []billing.PriceEntry{{Vendor: "v", Tenant: billing.Rate{Tiers: []billing.Tier{{}, {UpTo: 3}}}}}}}},
	} {
		if _, err := billing.NewPriceBook(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestUnitsFrom(t *testing.T) {
	got := billing.UnitsFrom(map[string]any{"images": 2.0, "tokens": 1234.0, "seconds": 2.1, "other": 5.0, "calls": 9.0})
	want := billing.Units{"calls": 1, "images": 2, "tokens": 1234, "seconds": 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := billing.UnitsFrom([]any{1}); len(got) != 1 {
		t.Errorf("non-object: %v", got)
	}
	if got := billing.UnitsFrom(map[string]any{"images": "2", "tokens": -1.0}); len(got) != 1 {
		t.Errorf("bad values counted: %v", got)
	}
}

// TestSeedTierVolumes: a restarted hub continues the month's tiers from
// the ledger instead of starting again at the first tier.
func TestSeedTierVolumes(t *testing.T) {
	b, err := billing.NewPriceBook(loadConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	dec := time.Date(2026, 12, 10, 0, 0, 0, 0, time.UTC)
	units := billing.Units{"calls": 1, "images": 2}
	l := openLedger(t, t.TempDir())
	var evs []billing.Event
	p1 := billing.NewPricer(b, nil)
	for i := range 3 {
		id := "c" + string(rune('0'+i))
		pay := p1.VendorPayout(t.Context(), "doubao", "generate_image", dec, billing.OutcomeOK, units)
		evs = append(evs, billing.Event{Key: billing.AttemptKey(id, 1), CallID: id, Kind: billing.KindAttempt, Attempt: 1, Time: dec,
			Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Outcome: billing.OutcomeOK, Units: units,
			VendorCost: pay.Cost, Currency: "USD"})
	}
	if err := l.Append(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	p2 := billing.NewPricer(b, nil)
	if err := p2.Seed(t.Context(), l, dec); err != nil {
		t.Fatal(err)
	}
	// The 4th payout of the month: still the second tier (0.008).
	if c := p2.VendorPayout(t.Context(), "doubao", "generate_image", dec, billing.OutcomeOK, units); c.Cost != 8_000 {
		t.Errorf("4th payout after seeding = %v, want 0.008000", c.Cost)
	}
	if c := p2.VendorPayout(t.Context(), "doubao", "generate_image", dec, billing.OutcomeOK, units); c.Cost != 7_000 {
		t.Errorf("5th payout after seeding = %v, want 0.007000", c.Cost)
	}
}
