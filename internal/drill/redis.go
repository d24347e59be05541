package drill

import (
	"context"
	"fmt"
	"log/slog"
)

// Log lines the shared-store drills time themselves by (hub/limit and
// billing write them).
const (
	logLimiterDown = "limit: shared limiter unreachable, using fallback limits"
	logLimiterBack = "limit: shared limiter reachable again, fallback ended"
	logLedgerDown  = "usage ledger unwritable: spilling events"
	logLedgerBack  = "usage ledger writable again: replaying the spill"
)

// redisConfig is the hub of the Redis drill: limits and the result cache
// in Redis, reached through the proxy; two instances share the limit, so
// the local fallback admits rate/2 — still four times the offered rate.
const redisConfig = `
redis: redis://%s/0
redis_prefix: %q
instances: 2
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    limits: {rps: %.0f, burst: %.0f}
    probe: {disabled: true}
cache:
  tools: {weather-a__current_weather: {ttl: 200ms}}
governance: {retry: {max: 0}}
`

// RedisOutage runs weather-a__current_weather at a steady rate through a
// hub whose limits and cache live in Redis, cuts Redis (through a proxy),
// holds the outage, restores it and reports: when the limiter fell back to
// local limits, whether calls went on, when it returned to Redis, and
// whether the ledger has every call exactly once.
func RedisOutage(ctx context.Context, opts *OutageOptions) (OutageReport, error) {
	o := opts.defaults()
	rep := OutageReport{Store: "redis", Rate: o.Rate, Instances: 2}
	if o.Vendors == nil {
		return rep, errVendors
	}
	p, err := NewProxy(o.Redis)
	if err != nil {
		return rep, err
	}
	defer p.Close()
	prefix := uniqueID("drill-") + ":"
	defer dropRedisPrefix(o.Redis, prefix)
	var next slog.Handler
	if o.Logger != nil {
		next = o.Logger.Handler()
	}
	w := newLogWatch(next)
	l, err := NewLab(ctx, LabOptions{Logger: slog.New(w), Vendors: o.Vendors, Config: fmt.Sprintf(redisConfig, p.Addr(), prefix, 4*o.Rate, o.Rate)})
	if err != nil {
		return rep, err
	}
	defer l.Close()
	err = runOutage(ctx, l, w, p, o, &rep, logLimiterDown, logLimiterBack, nil)
	return rep, err
}
