// Package volumetest is the contract every [billing.VolumeCounter] passes.
package volumetest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/billing"
)

// Run runs the contract. newStore makes a fresh, empty store (use a unique
// key prefix) and returns open, which makes a counter on it: one hub's
// counter each time it is called (an in-process counter returns itself,
// it is one hub's).
func Run(t *testing.T, newStore func(t *testing.T) (open func() billing.VolumeCounter)) {
	ctx := context.Background()
	dec := billing.VolumeKey{Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Month: 202612}

	t.Run("CountsEachKeyFromOne", func(t *testing.T) {
		c := newStore(t)()
		others := []billing.VolumeKey{
			{Tenant: "globex", Vendor: dec.Vendor, Tool: dec.Tool, Month: dec.Month},
			{Vendor: dec.Vendor, Tool: dec.Tool, Month: dec.Month}, // the vendor side
			{Tenant: dec.Tenant, Vendor: dec.Vendor, Month: dec.Month},
			{Tenant: dec.Tenant, Vendor: "sd", Tool: dec.Tool, Month: dec.Month},
			{Tenant: dec.Tenant, Vendor: dec.Vendor, Tool: dec.Tool, Month: 202701},
			{Tenant: `a":"b`, Vendor: dec.Vendor, Tool: dec.Tool, Month: dec.Month}, // quoting keeps keys apart
		}
		var got []int64
		for range 3 {
			got = append(got, next(t, c, dec))
		}
		for _, k := range others {
			got = append(got, next(t, c, k))
		}
		want := []int64{1, 2, 3, 1, 1, 1, 1, 1, 1}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("counts (-want +got):\n%s", diff)
		}
	})

	t.Run("SeedOnlyWhereNothingCounts", func(t *testing.T) {
		c := newStore(t)()
		fresh := billing.VolumeKey{Tenant: "globex", Vendor: "doubao", Tool: "generate_image", Month: 202612}
		next(t, c, dec)
		next(t, c, dec)
		if err := c.Seed(ctx, map[billing.VolumeKey]int64{dec: 100, fresh: 41}); err != nil {
			t.Fatal(err)
		}
		if n := next(t, c, dec); n != 3 {
			t.Errorf("a counting key after a seed: %d, want 3 (the seed does not move a count)", n)
		}
		if n := next(t, c, fresh); n != 42 {
			t.Errorf("a seeded key: %d, want 42", n)
		}
		if err := c.Seed(ctx, map[billing.VolumeKey]int64{fresh: 7}); err != nil {
			t.Fatal(err)
		}
		if n := next(t, c, fresh); n != 43 {
			t.Errorf("seeded twice: %d, want 43 (the first seed holds)", n)
		}
	})

	t.Run("SeedFromTwoHubs", func(t *testing.T) {
		open := newStore(t)
		a, b := open(), open()
		if err := a.Seed(ctx, map[billing.VolumeKey]int64{dec: 10}); err != nil {
			t.Fatal(err)
		}
		if n := next(t, a, dec); n != 11 {
			t.Errorf("first hub: %d, want 11", n)
		}
		// The second hub starts later with the same ledger count: the calls
		// counted meanwhile are not lost.
		if err := b.Seed(ctx, map[billing.VolumeKey]int64{dec: 10}); err != nil {
			t.Fatal(err)
		}
		if n := next(t, b, dec); n != 12 {
			t.Errorf("second hub: %d, want 12", n)
		}
	})

	t.Run("ConcurrentCallsGetDistinctNumbers", func(t *testing.T) {
		open := newStore(t)
		hubs := []billing.VolumeCounter{open(), open(), open()}
		const calls = 300
		got := make([]int64, calls)
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() {
				n, err := hubs[i%len(hubs)].Next(ctx, dec)
				if err != nil {
					t.Error(err)
				}
				got[i] = n
			})
		}
		wg.Wait()
		slices.Sort(got)
		for i, n := range got {
			if n != int64(i+1) {
				t.Fatalf("the %dth number handed out is %d: numbers are not 1..%d, each once", i+1, n, calls)
			}
		}
	})
}

func next(t *testing.T, c billing.VolumeCounter, k billing.VolumeKey) int64 {
	t.Helper()
	n, err := c.Next(context.Background(), k)
	if err != nil {
		t.Fatalf("Next(%v): %v", k, err)
	}
	return n
}
