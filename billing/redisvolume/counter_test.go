package redisvolume

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/volumetest"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

var quiet = slog.New(slog.DiscardHandler)

func TestContract(t *testing.T) {
	rdb := redistest.Client(t)
	volumetest.Run(t, func(t *testing.T) func() billing.VolumeCounter {
		prefix := redistest.Prefix(t, rdb)
		return func() billing.VolumeCounter { return New(rdb, &Options{Prefix: prefix, Logger: quiet}) }
	})
}

// tieredBook: acme pays 0.03 for its first 5 calls of a month, then 0.02;
// doubao is paid 0.01 for its first 3 attempts, then 0.008.
func tieredBook(t *testing.T) *billing.PriceBook {
	t.Helper()
	b, err := billing.NewPriceBook(billing.Config{Prices: []billing.VersionConfig{{
		Version: "2026-12", Effective: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Entries: []billing.PriceEntry{{Vendor: "doubao", Tool: "generate_image",
			Tenant: billing.Rate{Tiers: []billing.Tier{{UpTo: 5, PerCall: 30_000}, {PerCall: 20_000}}},
			Payout: billing.Rate{Tiers: []billing.Tier{{UpTo: 3, PerCall: 10_000}, {PerCall: 8_000}}},
		}, {Vendor: "sd", Tenant: billing.Rate{PerCall: 5_000}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTierBoundaryAcrossHubs: two hubs (two Pricers with their own
// counters) on one Redis prefix price alternate calls; the tier changes at
// exactly the configured call number of the month, counted across both.
func TestTierBoundaryAcrossHubs(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	book := tieredBook(t)
	hubs := []*billing.Pricer{
		billing.NewPricer(book, &billing.PricerOptions{Volumes: New(rdb, &Options{Prefix: prefix, Logger: quiet}), Logger: quiet}),
		billing.NewPricer(book, &billing.PricerOptions{Volumes: New(rdb, &Options{Prefix: prefix, Logger: quiet}), Logger: quiet}),
	}
	dec := time.Date(2026, 12, 10, 0, 0, 0, 0, time.UTC)
	units := billing.Units{billing.UnitCalls: 1}
	var tenant, payout []billing.Micros
	for i := range 8 {
		p := hubs[i%2]
		tenant = append(tenant, p.TenantCharge(ctx, "acme", "doubao", "generate_image", dec, billing.OutcomeOK, units).Cost)
		payout = append(payout, p.VendorPayout(ctx, "doubao", "generate_image", dec, billing.OutcomeOK, units).Cost)
	}
	wantTenant := []billing.Micros{30_000, 30_000, 30_000, 30_000, 30_000, 20_000, 20_000, 20_000}
	wantPayout := []billing.Micros{10_000, 10_000, 10_000, 8_000, 8_000, 8_000, 8_000, 8_000}
	for i := range 8 {
		if tenant[i] != wantTenant[i] || payout[i] != wantPayout[i] {
			t.Errorf("call %d (hub %d): tenant %v payout %v; want %v, %v", i+1, i%2, tenant[i], payout[i], wantTenant[i], wantPayout[i])
		}
	}

	// Concurrently, from both hubs: exactly 5 calls at the first tier in
	// a fresh month.
	jan := dec.AddDate(0, 1, 0)
	var first atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if hubs[i%2].TenantCharge(ctx, "acme", "doubao", "generate_image", jan, billing.OutcomeOK, units).Cost == 30_000 {
				first.Add(1)
			}
		})
	}
	wg.Wait()
	if n := first.Load(); n != 5 {
		t.Errorf("%d concurrent calls priced at the first tier, want 5", n)
	}

	// Untiered prices never touch Redis.
	hubs[0].TenantCharge(ctx, "acme", "sd", "txt2img", dec, billing.OutcomeOK, units)
	if n, err := rdb.Keys(ctx, prefix+"*\"sd\"*").Result(); err != nil || len(n) != 0 {
		t.Errorf("untiered price counted in redis: %v, %v", n, err)
	}
}

// TestSeedOnce: the first hub seeds the count from the
// ledger; a second hub starting later seeds nothing over it.
func TestSeedOnce(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	k := billing.VolumeKey{Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Month: 202612}
	a := New(rdb, &Options{Prefix: prefix, Logger: quiet})
	if err := a.Seed(ctx, map[billing.VolumeKey]int64{k: 4}); err != nil {
		t.Fatal(err)
	}
	ttl, err := rdb.TTL(ctx, prefix+k.String()).Result()
	if err != nil || ttl <= 0 {
		t.Fatalf("seeded key has no expiry: %v, %v", ttl, err)
	}
	for range 3 {
		a.Next(ctx, k)
	}
	b := New(rdb, &Options{Prefix: prefix, Logger: quiet})
	if err := b.Seed(ctx, map[billing.VolumeKey]int64{k: 4}); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.Next(ctx, k); n != 8 {
		t.Errorf("second hub's first call: %d, want 8", n)
	}
	// Redis lost the key (flushed): the next call seeds it again from what
	// the hub last saw instead of starting the month again.
	rdb.Del(ctx, prefix+k.String())
	if n, _ := a.Next(ctx, k); n != 8 {
		t.Errorf("after the key was lost: %d, want 8 (hub a last saw 7)", n)
	}
}

// failing makes every command fail while on, as an unreachable Redis does.
type failing struct{ on atomic.Bool }

var errDown = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (f *failing) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f *failing) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.on.Load() {
			cmd.SetErr(errDown)
			return errDown
		}
		return next(ctx, cmd)
	}
}
func (f *failing) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.on.Load() {
			return errDown
		}
		return next(ctx, cmds)
	}
}

// countingHandler counts log records by level.
type countingHandler struct {
	slog.Handler
	warn, info *atomic.Int32
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	switch r.Level {
	case slog.LevelWarn:
		h.warn.Add(1)
	case slog.LevelInfo:
		h.info.Add(1)
	}
	return nil
}

// TestFallbackWhileRedisIsDown: with Redis unreachable the counter goes on
// locally from the last shared count, logs once, and when a probe finds
// Redis again adds the calls counted meanwhile to the shared count.
func TestFallbackWhileRedisIsDown(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	down := &failing{}
	flaky := redis.NewClient(&redis.Options{Addr: redistest.Addr()})
	t.Cleanup(func() { flaky.Close() })
	flaky.AddHook(down)
	var warn, info atomic.Int32
	now := time.Date(2026, 12, 10, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a := New(flaky, &Options{Prefix: prefix, ProbeInterval: time.Second, Now: clock,
		Logger: slog.New(countingHandler{warn: &warn, info: &info})})
	b := New(rdb, &Options{Prefix: prefix, Logger: quiet}) // another hub, Redis fine
	k := billing.VolumeKey{Tenant: "acme", Vendor: "doubao", Tool: "generate_image", Month: 202612}

	for want := int64(1); want <= 3; want++ {
		if n, _ := a.Next(ctx, k); n != want {
			t.Fatalf("call %d: %d", want, n)
		}
	}
	down.on.Store(true)
	for want := int64(4); want <= 8; want++ {
		if n, err := a.Next(ctx, k); err != nil || n != want {
			t.Fatalf("call %d while down: %d, %v", want, n, err)
		}
	}
	if !a.Degraded() || warn.Load() != 1 {
		t.Fatalf("degraded %v, %d warnings; want true, 1", a.Degraded(), warn.Load())
	}
	a.probes.Wait()
	// The probe waits for its interval; Redis still down: still local.
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	a.Next(ctx, k) // 9, starts a probe, which fails
	a.probes.Wait()
	if !a.Degraded() {
		t.Fatal("a failed probe ended the fallback")
	}
	down.on.Store(false)
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	if n, _ := a.Next(ctx, k); n != 10 {
		t.Fatalf("call 10, while the probe runs: %d", n)
	}
	a.probes.Wait()
	if a.Degraded() || info.Load() != 1 || warn.Load() != 1 {
		t.Fatalf("after Redis is back: degraded %v, %d warnings, %d infos; want false, 1, 1", a.Degraded(), warn.Load(), info.Load())
	}
	// Back on Redis: the 7 calls counted locally are added to the shared count.
	if n, _ := a.Next(ctx, k); n != 11 {
		t.Errorf("first call back on redis: %d, want 11", n)
	}
	if n, _ := b.Next(ctx, k); n != 12 {
		t.Errorf("the other hub's next call: %d, want 12", n)
	}
}
