// Package redislimit is the shared [limit.Limiter]: a GCRA in one Lua
// script on the Redis server's clock, so every hub on one Redis admits
// a rule's rate together (internal/backend opens it, wrapped in a
// [limit.Fallback], when redis is set).
package redislimit

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/hub/limit"
)

// gcra is the whole decision, run atomically by Redis on the server's clock.
//
// State per key is one number: the theoretical arrival time (TAT, in
// microseconds) at which the bucket would be full again. A request for n
// tokens moves TAT forward by n emission intervals; it is admitted if the
// new TAT is no further than (burst - reserve) intervals ahead of now.
// The key expires when the bucket is full again, so idle keys cost nothing.
//
// KEYS[1] bucket key
// ARGV[1] emission interval in microseconds (1e6 / rate)
// ARGV[2] burst, ARGV[3] reserve, ARGV[4] n
// ARGV[5] clock offset in microseconds (always 0 outside this package's tests)
// Returns {allowed 0|1, remaining whole tokens, retry after in microseconds}.
var gcra = redis.NewScript(`
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local reserve = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) + tonumber(ARGV[5])
local capacity = burst * interval
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then
  tat = now
end
local new_tat = tat + n * interval
local allow_at = new_tat - (burst - reserve) * interval
if now < allow_at then
  local remaining = math.floor((now + capacity - tat) / interval + 1e-9)
  return {0, remaining, math.ceil(allow_at - now)}
end
local ttl_ms = math.max(1, math.ceil((new_tat - now) / 1000))
redis.call('SET', KEYS[1], string.format('%.17g', new_tat), 'PX', ttl_ms)
local remaining = math.floor((now + capacity - new_tat) / interval + 1e-9)
return {1, remaining, 0}
`)

// Options configures [New]. A nil *Options means all defaults.
type Options struct {
	// Prefix is prepended to every key. Empty means "toolhub:limit:".
	Prefix string
}

// Limiter is a [limit.Limiter] shared by every process using the same Redis and
// prefix: a GCRA (generic cell rate algorithm) evaluated in one Lua script
// on the Redis server's clock, so N processes together admit the rule's
// rate, not N times it, and their clocks need not agree.
//
// Each key costs one short string in Redis, expiring once its bucket has
// refilled. One round trip per decision (EVALSHA, falling back to EVAL once
// after a script cache flush). Timeouts come from the go-redis client's
// options; keep them short, and wrap the limiter in a [limit.Fallback].
type Limiter struct {
	client redis.Scripter
	prefix string
	offset atomic.Int64 // microseconds added to server time; set only by tests
}

var _ limit.Limiter = (*Limiter)(nil)

// New returns a limiter backed by client (a *redis.Client,
// *redis.ClusterClient or *redis.Ring; each decision touches one key).
func New(client redis.Scripter, opts *Options) *Limiter {
	l := &Limiter{client: client, prefix: "toolhub:limit:"}
	if opts != nil && opts.Prefix != "" {
		l.prefix = opts.Prefix
	}
	return l
}

// Allow implements [limit.Limiter].
func (l *Limiter) Allow(ctx context.Context, key string, r limit.Rule, n int) (limit.Decision, error) {
	if err := limit.CheckRule(r, n); err != nil {
		return limit.Decision{}, err
	}
	interval := 1e6 / r.Rate
	res, err := gcra.Run(ctx, l.client, []string{l.prefix + key},
		strconv.FormatFloat(interval, 'g', -1, 64), r.Burst, r.Reserve, n, l.offset.Load()).Int64Slice()
	if err != nil {
		return limit.Decision{}, fmt.Errorf("limit: redis: key %q: %w", key, err)
	}
	if len(res) != 3 {
		return limit.Decision{}, fmt.Errorf("limit: redis: key %q: unexpected script reply %v", key, res)
	}
	return limit.Decision{
		Allowed:    res[0] == 1,
		Remaining:  int(res[1]),
		RetryAfter: time.Duration(res[2]) * time.Microsecond,
	}, nil
}
