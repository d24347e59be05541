package billing_test

import (
	"testing"
	"time"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/volumetest"
)

func TestMemoryVolumesContract(t *testing.T) {
	volumetest.Run(t, func(t *testing.T) func() billing.VolumeCounter {
		c := billing.NewMemoryVolumes() // one hub: every open is the same counter
		return func() billing.VolumeCounter { return c }
	})
}

// BenchmarkTenantCharge prices one call as the meter does after it: an
// untiered price never asks the volume counter; a tiered one asks the
// in-process counter (billing/redisvolume adds a Redis round trip).
func BenchmarkTenantCharge(b *testing.B) {
	untiered := book(b)
	bk, err := billing.NewPriceBook(billing.Config{Prices: []billing.VersionConfig{{Version: "t", Entries: []billing.PriceEntry{
		{Vendor: "doubao", Tool: "generate_image", Tenant: billing.Rate{Tiers: []billing.Tier{{UpTo: 1000, PerCall: 30_000}, {PerCall: 20_000}}}},
	}}}})
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	units := billing.Units{billing.UnitCalls: 1, billing.UnitImages: 1}
	for name, book := range map[string]*billing.PriceBook{"untiered": untiered, "tiered": bk} {
		b.Run(name, func(b *testing.B) {
			p := billing.NewPricer(book, nil)
			for b.Loop() {
				p.TenantCharge(b.Context(), "acme", "doubao", "generate_image", at, billing.OutcomeOK, units)
			}
		})
	}
}
