package billing

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// VolumeKey names one monthly volume counter of a tiered [Rate]: a
// tenant's calls answered by a vendor tool (Tenant set), or the vendor
// tool's paid attempts across tenants (Tenant ""). Tool is the price
// entry's tool: "" for a vendor's catch-all entry, which counts every tool
// it prices.
type VolumeKey struct {
	Tenant, Vendor, Tool string
	Month                int // year*100 + month, UTC (202612)
}

// String is the key as one unambiguous string (month and quoted names),
// for stores that need a string key.
func (k VolumeKey) String() string {
	b := strconv.AppendInt(make([]byte, 0, 16+len(k.Tenant)+len(k.Vendor)+len(k.Tool)), int64(k.Month), 10)
	b = append(b, ':')
	b = strconv.AppendQuote(b, k.Tenant)
	b = append(b, ':')
	b = strconv.AppendQuote(b, k.Vendor)
	b = append(b, ':')
	b = strconv.AppendQuote(b, k.Tool)
	return string(b)
}

// MonthEnd is the first instant after the key's month, UTC.
func (k VolumeKey) MonthEnd() time.Time {
	return time.Date(k.Month/100, time.Month(k.Month%100)+1, 1, 0, 0, 0, 0, time.UTC)
}

// VolumeCounter counts, per [VolumeKey], the calls of a month that volume
// tiers price: the Nth call of the month is priced by the tier holding N.
// [MemoryVolumes] (the default) counts in the process; billing/redisvolume
// shares one count between every hub on the same Redis. billing/volumetest
// holds the contract every implementation passes.
type VolumeCounter interface {
	// Next counts one more call on k and returns its number in the month,
	// 1-based, this call included. An error means the call could not be
	// counted at all; the [Pricer] then prices it at the first tier.
	Next(ctx context.Context, k VolumeKey) (int64, error)
	// Seed gives the counts the ledger holds (at start, from
	// [Pricer.Seed]) to keys that have no count yet; a key already
	// counting keeps its count, so a hub that starts late never moves a
	// shared count back.
	Seed(ctx context.Context, counts map[VolumeKey]int64) error
}

// MemoryVolumes is the in-process [VolumeCounter]: exact with one hub;
// with several, each counts only its own calls after its start. It keeps
// the current and the previous month.
type MemoryVolumes struct {
	mu     sync.Mutex
	n      map[VolumeKey]int64
	latest int // the latest month counted; older ones are swept when it moves
}

var _ VolumeCounter = (*MemoryVolumes)(nil)

// NewMemoryVolumes returns an empty in-process counter.
func NewMemoryVolumes() *MemoryVolumes { return &MemoryVolumes{n: map[VolumeKey]int64{}} }

// Next implements [VolumeCounter]; it never fails.
func (m *MemoryVolumes) Next(_ context.Context, k VolumeKey) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k.Month > m.latest {
		m.latest = k.Month
		SweepMonths(m.n, k.Month)
	}
	m.n[k]++
	return m.n[k], nil
}

// Seed implements [VolumeCounter].
func (m *MemoryVolumes) Seed(_ context.Context, counts map[VolumeKey]int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, n := range counts {
		if _, ok := m.n[k]; !ok {
			m.n[k] = n
		}
	}
	return nil
}

// SweepMonths deletes from counts the keys older than the month before
// month (a counter's map keeps the current and the previous month).
func SweepMonths[V any](counts map[VolumeKey]V, month int) {
	prev := month - 1
	if month%100 == 1 {
		prev = month - 100 + 11
	}
	for k := range counts {
		if k.Month < prev {
			delete(counts, k)
		}
	}
}
