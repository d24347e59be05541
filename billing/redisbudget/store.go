// Package redisbudget keeps budget counters in Redis so several hubs share
// one budget: a reservation checks and increments every counter of a call
// in one Lua script, so concurrent calls on any hub never overspend.
//
//	store := redisbudget.New(rdb, &redisbudget.Options{Prefix: "toolhub:"})
//	budgets, err := billing.NewBudgets(cfg.Budgets, &billing.BudgetOptions{Store: store, Pricer: pricer})
package redisbudget

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/billing"
)

// Options configure New. A nil *Options means the defaults.
type Options struct {
	Prefix string // key prefix; "" means "toolhub:"
}

// Store is a Redis [billing.BudgetStore]. Counters are integer micros;
// their keys carry the tenant in a hash tag, so one call's counters live in
// one cluster slot.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

var _ billing.BudgetStore = (*Store)(nil)

// New returns a store on rdb.
func New(rdb redis.UniversalClient, opts *Options) *Store {
	s := &Store{rdb: rdb, prefix: "toolhub:"}
	if opts != nil && opts.Prefix != "" {
		s.prefix = opts.Prefix
	}
	return s
}

// reserve: KEYS counters; ARGV[1] amount, then n limits, then n TTLs (ms).
// Returns {ok, spent1, …, spentN}.
var reserve = redis.NewScript(`
local amount = tonumber(ARGV[1])
local n = #KEYS
local out = {1}
for i = 1, n do
	local spent = tonumber(redis.call('GET', KEYS[i]) or '0')
	out[i + 1] = spent
	if amount > 0 and spent + amount > tonumber(ARGV[1 + i]) then
		out[1] = 0
	end
end
if out[1] == 0 then
	return out
end
for i = 1, n do
	out[i + 1] = redis.call('INCRBY', KEYS[i], amount)
	redis.call('PEXPIRE', KEYS[i], ARGV[1 + n + i])
end
return out
`)

// adjust: KEYS counters; ARGV[1] delta, then n TTLs (ms).
var adjust = redis.NewScript(`
for i = 1, #KEYS do
	redis.call('INCRBY', KEYS[i], ARGV[1])
	redis.call('PEXPIRE', KEYS[i], ARGV[1 + i])
end
return 0
`)

func (s *Store) keys(lines []billing.Line) []string {
	keys := make([]string, len(lines))
	for i, l := range lines {
		keys[i] = s.prefix + l.Key
	}
	return keys
}

// Reserve implements [billing.BudgetStore].
func (s *Store) Reserve(ctx context.Context, lines []billing.Line, amount billing.Micros) ([]billing.Micros, bool, error) {
	args := make([]any, 0, 1+2*len(lines))
	args = append(args, int64(amount))
	for _, l := range lines {
		args = append(args, int64(l.Limit))
	}
	for _, l := range lines {
		args = append(args, max(l.TTL.Milliseconds(), 1))
	}
	res, err := reserve.Run(ctx, s.rdb, s.keys(lines), args...).Int64Slice()
	if err != nil {
		return nil, false, fmt.Errorf("redisbudget: reserve: %w", err)
	}
	if len(res) != len(lines)+1 {
		return nil, false, fmt.Errorf("redisbudget: reserve: script returned %d values, want %d", len(res), len(lines)+1)
	}
	spent := make([]billing.Micros, len(lines))
	for i := range lines {
		spent[i] = billing.Micros(res[i+1])
	}
	return spent, res[0] == 1, nil
}

// Adjust implements [billing.BudgetStore].
func (s *Store) Adjust(ctx context.Context, lines []billing.Line, delta billing.Micros) error {
	if len(lines) == 0 {
		return nil
	}
	args := make([]any, 0, 1+len(lines))
	args = append(args, int64(delta))
	for _, l := range lines {
		args = append(args, max(l.TTL.Milliseconds(), 1))
	}
	if err := adjust.Run(ctx, s.rdb, s.keys(lines), args...).Err(); err != nil {
		return fmt.Errorf("redisbudget: adjust: %w", err)
	}
	return nil
}

// Spent implements [billing.BudgetStore].
func (s *Store) Spent(ctx context.Context, key string) (billing.Micros, error) {
	v, err := s.rdb.Get(ctx, s.prefix+key).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redisbudget: %w", err)
	}
	return billing.Micros(v), nil
}
