package ledgertest

import (
	"strconv"
	"time"

	"github.com/toolhub/toolhub/billing"
)

var (
	synthTenants = []string{"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka"}
	synthVendors = [][2]string{{"doubao", "generate_image"}, {"sd", "txt2img"}, {"weather-a", "current_weather"},
		{"weather-b", "forecast"}, {"maps", "route"}, {"places", "search"}}
)

// Synthetic returns the i-th event of a deterministic stream for benchmarks:
// call events and attempt events alternating, spread over 90 days from
// Base, 8 tenants, 6 vendors.
func Synthetic(i int) billing.Event {
	call := i / 2
	id := "bench-" + strconv.Itoa(call)
	v := synthVendors[call%len(synthVendors)]
	at := Base.Add(time.Duration(call%(90*24*60)) * time.Minute)
	ev := billing.Event{
		CallID: id, Time: at, Ingested: at, Tenant: synthTenants[call%len(synthTenants)], Vendor: v[0], Tool: v[1],
		Outcome: billing.OutcomeOK, Latency: 120 * time.Millisecond, Units: billing.Units{billing.UnitCalls: 1},
		Currency: "USD", PriceVersion: "2026-11",
	}
	if t := int64(call % 500); t > 0 { // as the meter records units: none of 0
		ev.Units[billing.UnitTokens] = t
	}
	if i%2 == 0 {
		ev.Key, ev.Kind, ev.TenantUnitPrice, ev.TenantCost = billing.CallKey(id), billing.KindCall, 2000, 2000+billing.Micros(call%500)
	} else {
		ev.Key, ev.Kind, ev.Attempt, ev.VendorUnitPrice, ev.VendorCost = billing.AttemptKey(id, 1), billing.KindAttempt, 1, 1000, 1000
	}
	return ev
}

// SyntheticCall returns the i-th event of a stream of single-attempt
// calls as the meter records them: each is one merged event (see
// billing.MergeAttempt), standing for Synthetic(2i) and Synthetic(2i+1).
func SyntheticCall(i int) billing.Event {
	call, att := Synthetic(2*i), Synthetic(2*i+1)
	m, ok := billing.MergeAttempt(&call, &att)
	if !ok {
		panic("ledgertest: synthetic call and attempt do not merge")
	}
	return m
}
