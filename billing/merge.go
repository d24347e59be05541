package billing

import (
	"maps"
	"strings"
)

// A call answered by its one vendor attempt is stored as one event, not
// two: the call event carrying its attempt (a merged event). Most calls
// are such calls, so the write-ahead log and the ledger write half the
// rows. A merged event is a call event (Kind call) with Attempt 1: the
// attempt's payout in VendorUnitPrice and VendorCost, its latency in
// AttemptLatency. Everything else the two events would carry is equal —
// [MergeAttempt] merges only then — so [Event.Split] gives both back
// exactly, and the ledgers' Query returns the two events, never the
// merged one: whatever reads events (reports, statements, exports) sees
// what it saw before.

// Merged reports whether ev is a merged event: a call event standing for
// its first attempt too.
func (ev *Event) Merged() bool { return ev.Kind == KindCall && ev.Attempt == 1 }

// mergedAttemptKey is the key of the attempt the merged event ev stands
// for ("<id>/1" for a call keyed "<id>/call").
func mergedAttemptKey(callKey string) (string, bool) {
	id, ok := strings.CutSuffix(callKey, "/call")
	if !ok {
		return "", false
	}
	return AttemptKey(id, 1), true
}

// MergeAttempt returns the one event standing for call and att, when att
// is the call's first attempt and carries nothing the call event does not
// (same key stem, call id, times, tenant, vendor, tool, capability,
// outcome, reason, units, currency and price version; no tenant charge on
// the attempt and no payout on the call). Otherwise ok is false and the
// two are stored as they are.
func MergeAttempt(call, att *Event) (Event, bool) {
	if call.Kind != KindCall || call.Attempt != 0 || att.Kind != KindAttempt || att.Attempt != 1 {
		return Event{}, false
	}
	if k, ok := mergedAttemptKey(call.Key); !ok || k != att.Key {
		return Event{}, false
	}
	if call.CallID != att.CallID || !call.Time.Equal(att.Time) || !call.Ingested.Equal(att.Ingested) ||
		call.Time.Location() != att.Time.Location() || call.Ingested.Location() != att.Ingested.Location() ||
		call.Tenant != att.Tenant || call.Vendor != att.Vendor || call.Tool != att.Tool || call.Capability != att.Capability ||
		call.Outcome != att.Outcome || call.Reason != att.Reason || call.Currency != att.Currency || call.PriceVersion != att.PriceVersion ||
		call.Adjusts != "" || att.Adjusts != "" || call.VendorUnitPrice != 0 || call.VendorCost != 0 ||
		att.TenantUnitPrice != 0 || att.TenantCost != 0 || call.AttemptLatency != 0 || att.AttemptLatency != 0 ||
		(call.Units == nil) != (att.Units == nil) || !maps.Equal(call.Units, att.Units) {
		return Event{}, false
	}
	m := *call
	m.Attempt = 1
	m.VendorUnitPrice, m.VendorCost = att.VendorUnitPrice, att.VendorCost
	m.AttemptLatency = att.Latency
	return m, true
}

// Split returns the call event and the attempt event a merged event
// stands for (merged true), or ev itself (merged false).
func (ev Event) Split() (call, attempt Event, merged bool) {
	if !ev.Merged() {
		return ev, Event{}, false
	}
	key, ok := mergedAttemptKey(ev.Key)
	if !ok {
		return ev, Event{}, false
	}
	call, attempt = ev, ev
	call.Attempt, call.VendorUnitPrice, call.VendorCost, call.AttemptLatency = 0, 0, 0, 0
	attempt.Key, attempt.Kind, attempt.Latency, attempt.AttemptLatency = key, KindAttempt, ev.AttemptLatency, 0
	attempt.TenantUnitPrice, attempt.TenantCost = 0, 0
	if ev.Units != nil {
		attempt.Units = maps.Clone(ev.Units)
	}
	return call, attempt, true
}

// resolvedAttempt is the key of the attempt event ev records, if any: its
// own key for an attempt event, its first attempt's for a merged event.
func resolvedAttempt(ev *Event) (string, bool) {
	switch {
	case ev.Kind == KindAttempt:
		return ev.Key, true
	case ev.Merged():
		return mergedAttemptKey(ev.Key)
	}
	return "", false
}
