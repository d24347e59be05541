package limit

import (
	"context"
	"math"
)

// Class is what a call is, for [Priority]. The zero value is an
// interactive first attempt.
type Class struct {
	// Batch marks traffic that yields to interactive traffic.
	Batch bool
	// Retry marks a retry of a failed attempt, which may use the headroom.
	Retry bool
}

// Priority admits classes of calls against the same bucket with different
// thresholds, so that near saturation batch calls are refused before
// interactive ones and first attempts before retries. It sets
// [Rule.Reserve] — the tokens a call must leave in the bucket — from shares
// of the burst:
//
//	class               must leave in the bucket     defaults
//	batch first         (Headroom + BatchShare)      70%
//	batch retry         BatchShare                   40%
//	interactive first   Headroom                     30%
//	interactive retry   nothing                       0%
//
// As a bucket drains, classes are refused from the top of the table down.
// The order is strict while BatchShare > Headroom; with a smaller
// BatchShare, batch retries would outrank interactive first attempts.
// Shares are rounded down to whole tokens, and a reserve is lowered if
// needed so that a full bucket can still admit the call.
type Priority struct {
	// Limiter holds the buckets.
	Limiter Limiter
	// Headroom is the share of the burst kept for retries.
	// Zero means 0.3; a negative value means none.
	Headroom float64
	// BatchShare is the further share of the burst batch calls leave to
	// interactive ones. Zero means 0.4; a negative value means none.
	BatchShare float64
}

// Allow takes n tokens from key's bucket for a call of class c.
func (p Priority) Allow(ctx context.Context, key string, r Rule, n int, c Class) (Decision, error) {
	r.Reserve = p.Reserve(r, n, c)
	return p.Limiter.Allow(ctx, key, r, n)
}

// Reserve returns the number of tokens a call of class c for n tokens must
// leave in a bucket of rule r (r.Reserve is ignored).
func (p Priority) Reserve(r Rule, n int, c Class) int {
	share := 0.0
	if !c.Retry {
		share += orDefault(p.Headroom, 0.3)
	}
	if c.Batch {
		share += orDefault(p.BatchShare, 0.4)
	}
	reserve := int(math.Floor(share*float64(r.Burst) + 1e-9))
	return max(0, min(reserve, r.Burst-n))
}

func orDefault(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
