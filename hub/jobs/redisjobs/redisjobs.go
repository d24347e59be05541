// Package redisjobs is the shared [jobs.Store] and [jobs.WebhookStore]:
// several toolhub instances on one Redis are one queue (Redis Streams with
// a consumer group, state changed by Lua scripts). It implements
// [jobs.Waker], so a wake on one instance reaches every instance's pool,
// and passes the contract suite hub/jobs/jobstest.
//
//	store, err := redisjobs.New(ctx, rdb, &redisjobs.Options{Prefix: "toolhub:jobs:"})
//	q := jobs.NewQueue(store, nil)
package redisjobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/jobs/internal/jobrow"

	"github.com/redis/go-redis/v9"
)

// Options configure [New]. Nil means the defaults.
type Options struct {
	// Prefix starts every key; empty means "toolhub:jobs:". Instances that
	// share a queue use the same prefix.
	Prefix string
	// Now is the clock; nil means time.Now. Instances sharing a queue must
	// have clocks in step (leases and NextAt are compared to it).
	Now func() time.Time
	// EventsMaxLen bounds the event streams (approximately); zero means
	// 100000 for all tenants together and a tenth of that per tenant.
	EventsMaxLen int64
	// ReclaimIdle is how long a claimed job's stream entry must sit idle
	// (Redis's own clock) before another worker may take it over, if its
	// lease (the Now clock) has also expired; zero means the claimer's lease.
	ReclaimIdle time.Duration
	// LaterGroups leaves the consumer group to the first [Store.Claim]
	// (or [Store.EnsureGroups]) instead of creating it in New: for a
	// caller that already knows Redis is away, so New does not wait out
	// the client's timeouts and retries. False creates it in New.
	LaterGroups bool
}

// Store is the shared [jobs.Store]: several toolhub instances on one Redis are
// one queue. Work is two streams (prefix+"q" for interactive calls,
// prefix+"qb" for batch ones, read second) read by the consumer group
// "workers" (XREADGROUP); a job whose worker died stays pending and is
// taken over with XAUTOCLAIM once it has been idle for a lease. The job's
// state is a hash (prefix+"job:"+id) changed only by Lua scripts that also
// append the event, so a state change and its event are one atomic step.
// Retries wait in a sorted set (prefix+"delayed") until due.
//
// Keys are built inside the scripts, so this store needs a single Redis
// (or one hash slot), not a Redis Cluster.
type Store struct {
	rdb    redis.UniversalClient
	p      string
	now    func() time.Time
	maxLen int64
	idle   time.Duration
	// grouped is set once the work streams' consumer group exists (New,
	// or the first Claim that reaches Redis, see [Store.EnsureGroups]).
	grouped atomic.Bool
	later   bool // made with Options.LaterGroups
}

var _ jobs.Store = (*Store)(nil)

const redisGroup = "workers"

// New returns a Redis store and creates the consumer group if needed.
// A Redis that does not answer does not fail New (a hub starts while its
// Redis is away): [Store.Claim] creates the group once Redis answers, and
// until then every call fails as it does while Redis is away later. An
// answer of Redis's own (a key of another type, a refused password) fails
// New. Close does not close rdb.
func New(ctx context.Context, rdb redis.UniversalClient, opts *Options) (*Store, error) {
	s := &Store{rdb: rdb, p: "toolhub:jobs:", now: time.Now, maxLen: 100000}
	if opts != nil {
		if opts.Prefix != "" {
			s.p = opts.Prefix
		}
		if opts.Now != nil {
			s.now = opts.Now
		}
		s.idle = opts.ReclaimIdle
		if opts.EventsMaxLen > 0 {
			s.maxLen = opts.EventsMaxLen
		}
	}
	if opts != nil && opts.LaterGroups {
		s.later = true
		return s, nil
	}
	if err := s.EnsureGroups(ctx); err != nil {
		var re redis.Error
		if errors.As(err, &re) {
			return nil, err
		}
	}
	return s, nil
}

// EnsureGroups creates the work streams' consumer group unless it exists
// already. Claim calls it until it succeeds once, and again after Redis
// answered that the group is gone (a Redis restarted without its data).
func (s *Store) EnsureGroups(ctx context.Context) error {
	if s.grouped.Load() {
		return nil
	}
	for _, q := range s.streams() {
		err := s.rdb.XGroupCreateMkStream(ctx, q, redisGroup, "0").Err()
		if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
			return fmt.Errorf("jobs: redis: create consumer group on %s: %w", q, err)
		}
	}
	s.grouped.Store(true)
	return nil
}

// streams are the work streams, most urgent first: interactive calls
// (priority 0), then the rest.
func (s *Store) streams() []string { return []string{s.p + "q", s.p + "qb"} }

func (s *Store) Close() error { return nil }

// luaLib is prepended to every script. ARGV[1] is always the key prefix.
const luaLib = `
local P = ARGV[1]
local function emit(k, result, now)
	local f = redis.call('HMGET', k, 'id', 'tenant', 'tool', 'status', 'attempts', 'err')
	local seq = redis.call('INCR', P .. 'evseq')
	local id = seq .. '-0'
	local fields = {'job_id', f[1], 'tenant', f[2], 'tool', f[3], 'status', f[4], 'attempts', f[5], 'error', f[6], 'result', result, 'at', now}
	redis.call('XADD', P .. 'ev', 'MAXLEN', '~', ARGV[2], id, unpack(fields))
	redis.call('XADD', P .. 'ev:' .. f[2], 'MAXLEN', '~', math.floor(tonumber(ARGV[2]) / 10) + 100, id, unpack(fields))
end
local function qkey(id)
	if (tonumber(redis.call('HGET', P .. 'job:' .. id, 'prio') or '0') or 0) > 0 then return P .. 'qb' end
	return P .. 'q'
end
local function schedule(id, nextAt, now)
	if tonumber(nextAt) <= tonumber(now) then
		redis.call('XADD', qkey(id), '*', 'id', id)
	else
		redis.call('ZADD', P .. 'delayed', nextAt, id)
	end
end
local function final(st)
	return st == 'succeeded' or st == 'failed' or st == 'rejected' or st == 'canceled'
end
local function drop(q, msg)
	if msg and msg ~= '' then
		redis.call('XACK', q, 'workers', msg)
		redis.call('XDEL', q, msg)
	end
end
`

// ARGV: P, maxlen, id, tenant, tool, args, meta, prio, status, attempts, next_at, err, created, now
var redisAdd = redis.NewScript(luaLib + `
local k = P .. 'job:' .. ARGV[3]
if redis.call('EXISTS', k) == 1 then return redis.error_reply('job exists') end
redis.call('HSET', k, 'id', ARGV[3], 'tenant', ARGV[4], 'tool', ARGV[5], 'args', ARGV[6], 'meta', ARGV[7],
	'prio', ARGV[8], 'status', ARGV[9], 'attempts', ARGV[10], 'next_at', ARGV[11], 'err', ARGV[12],
	'result', '', 'owner', '', 'lease', 0, 'msg', '', 'created', ARGV[13], 'updated', ARGV[14], 'keep', 0)
if ARGV[9] == 'queued' then schedule(ARGV[3], ARGV[11], ARGV[14]) end
emit(k, '', ARGV[14])
return 1
`)

// ARGV: P, maxlen, now
var redisPromote = redis.NewScript(luaLib + `
local ids = redis.call('ZRANGEBYSCORE', P .. 'delayed', '-inf', ARGV[3], 'LIMIT', 0, 100)
for _, id in ipairs(ids) do
	redis.call('ZREM', P .. 'delayed', id)
	local st = redis.call('HGET', P .. 'job:' .. id, 'status')
	if st == 'queued' or st == 'waiting' then
		redis.call('XADD', qkey(id), '*', 'id', id)
	end
end
return #ids
`)

// ARGV: P, maxlen, msg, id, owner, now, lease_until, stream
var redisClaim = redis.NewScript(luaLib + `
local k = P .. 'job:' .. ARGV[4]
local st = redis.call('HGET', k, 'status')
if not st then drop(ARGV[8], ARGV[3]) return false end
if st == 'running' then
	if tonumber(redis.call('HGET', k, 'lease')) >= tonumber(ARGV[6]) then return false end
	local cur = redis.call('HGET', k, 'msg')
	if cur ~= ARGV[3] then drop(ARGV[8], ARGV[3]) return false end
elseif st == 'queued' or st == 'waiting' then
	if tonumber(redis.call('HGET', k, 'next_at')) > tonumber(ARGV[6]) then
		drop(ARGV[8], ARGV[3])
		redis.call('ZADD', P .. 'delayed', redis.call('HGET', k, 'next_at'), ARGV[4])
		return false
	end
else
	drop(ARGV[8], ARGV[3])
	return false
end
redis.call('SREM', P .. 'waiting', ARGV[4])
redis.call('HINCRBY', k, 'attempts', 1)
redis.call('HSET', k, 'status', 'running', 'owner', ARGV[5], 'lease', ARGV[7], 'msg', ARGV[3], 'updated', ARGV[6])
emit(k, '', ARGV[6])
return redis.call('HGETALL', k)
`)

// ARGV: P, maxlen, id, owner, lease_until
var redisRenew = redis.NewScript(luaLib + `
local k = P .. 'job:' .. ARGV[3]
local f = redis.call('HMGET', k, 'status', 'owner')
if f[1] ~= 'running' or f[2] ~= ARGV[4] then return 0 end
redis.call('HSET', k, 'lease', ARGV[5])
return 1
`)

// ARGV: P, maxlen, id, owner, status, result, err, next_at, keep, now
var redisFinish = redis.NewScript(luaLib + `
local k = P .. 'job:' .. ARGV[3]
local f = redis.call('HMGET', k, 'status', 'owner', 'msg')
if f[1] ~= 'running' or f[2] ~= ARGV[4] then return 0 end
drop(qkey(ARGV[3]), f[3])
redis.call('HSET', k, 'status', ARGV[5], 'result', ARGV[6], 'err', ARGV[7], 'next_at', ARGV[8], 'keep', ARGV[9],
	'owner', '', 'lease', 0, 'msg', '', 'updated', ARGV[10])
if ARGV[5] == 'waiting' then
	if tonumber(redis.call('HGET', k, 'attempts')) > 0 then redis.call('HINCRBY', k, 'attempts', -1) end
	redis.call('SADD', P .. 'waiting', ARGV[3])
	schedule(ARGV[3], ARGV[8], ARGV[10])
elseif ARGV[5] == 'queued' then
	schedule(ARGV[3], ARGV[8], ARGV[10])
elseif tonumber(ARGV[9]) > 0 then
	redis.call('ZADD', P .. 'keep', ARGV[9], ARGV[3])
end
emit(k, ARGV[6], ARGV[10])
return 1
`)

// ARGV: P, maxlen, id, from, to, reason, keep, now
var redisTransition = redis.NewScript(luaLib + `
local k = P .. 'job:' .. ARGV[3]
local st = redis.call('HGET', k, 'status')
if not st then return {0, ''} end
if st ~= ARGV[4] then return {1, st} end
redis.call('HSET', k, 'status', ARGV[5], 'err', ARGV[6], 'next_at', ARGV[8], 'keep', ARGV[7], 'updated', ARGV[8])
redis.call('SREM', P .. 'waiting', ARGV[3])
if ARGV[5] == 'queued' then schedule(ARGV[3], ARGV[8], ARGV[8]) end
if final(ARGV[5]) and tonumber(ARGV[7]) > 0 then redis.call('ZADD', P .. 'keep', ARGV[7], ARGV[3]) end
emit(k, '', ARGV[8])
return {2, redis.call('HGETALL', k)}
`)

// ARGV: P, maxlen, now
var redisWake = redis.NewScript(luaLib + `
local ids = redis.call('SMEMBERS', P .. 'waiting')
local n = 0
for _, id in ipairs(ids) do
	redis.call('SREM', P .. 'waiting', id)
	local k = P .. 'job:' .. id
	if redis.call('HGET', k, 'status') == 'waiting' then
		redis.call('HSET', k, 'status', 'queued', 'next_at', ARGV[3], 'updated', ARGV[3])
		redis.call('ZREM', P .. 'delayed', id)
		redis.call('XADD', qkey(id), '*', 'id', id)
		emit(k, '', ARGV[3])
		n = n + 1
	end
end
-- Jobs between retries try again now too (their status is unchanged: no event).
for _, id in ipairs(redis.call('ZRANGE', P .. 'delayed', 0, -1)) do
	local k = P .. 'job:' .. id
	redis.call('ZREM', P .. 'delayed', id)
	if redis.call('HGET', k, 'status') == 'queued' then
		redis.call('HSET', k, 'next_at', ARGV[3], 'updated', ARGV[3])
		redis.call('XADD', qkey(id), '*', 'id', id)
		n = n + 1
	end
end
redis.call('PUBLISH', P .. 'wake', n)
return n
`)

// ARGV: P, maxlen, now
var redisPurge = redis.NewScript(luaLib + `
local ids = redis.call('ZRANGEBYSCORE', P .. 'keep', '-inf', ARGV[3], 'LIMIT', 0, 1000)
local n = 0
for _, id in ipairs(ids) do
	redis.call('ZREM', P .. 'keep', id)
	local k = P .. 'job:' .. id
	if final(redis.call('HGET', k, 'status') or '') then
		redis.call('DEL', k)
		n = n + 1
	end
end
return n
`)

func (s *Store) argv(rest ...any) []any {
	return append([]any{s.p, s.maxLen}, rest...)
}

func (s *Store) Add(ctx context.Context, j *jobs.Job) error {
	now := s.now()
	if err := jobrow.Added(j, now); err != nil {
		return err
	}
	err := redisAdd.Run(ctx, s.rdb, nil, s.argv(j.ID, j.Tenant, j.Tool, jobrow.NullJSON(j.Arguments), jobrow.NullJSON(j.Meta), j.Priority,
		string(j.Status), j.Attempts, jobrow.MS(j.NextAt), j.LastError, jobrow.MS(j.Created), jobrow.MS(now))...).Err()
	if err != nil {
		return fmt.Errorf("jobs: add %s: %w", j.ID, err)
	}
	return nil
}

func (s *Store) Get(ctx context.Context, id string) (*jobs.Job, error) {
	m, err := s.rdb.HGetAll(ctx, s.p+"job:"+id).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: get %s: %w", id, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%w: %s", jobs.ErrNotFound, id)
	}
	return jobFromHash(m), nil
}

func jobFromHash(m map[string]string) *jobs.Job {
	n := func(k string) int64 { v, _ := strconv.ParseInt(m[k], 10, 64); return v }
	return &jobs.Job{
		ID: m["id"], Tenant: m["tenant"], Tool: m["tool"],
		Arguments: jobrow.RawOrNil(m["args"]), Meta: jobrow.RawOrNil(m["meta"]), Result: jobrow.RawOrNil(m["result"]),
		Priority: int(n("prio")), Status: jobs.Status(m["status"]), Attempts: int(n("attempts")),
		NextAt: jobrow.FromMS(n("next_at")), LastError: m["err"], Owner: m["owner"], LeaseTil: jobrow.FromMS(n("lease")),
		Created: jobrow.FromMS(n("created")), Updated: jobrow.FromMS(n("updated")), KeepUntil: jobrow.FromMS(n("keep")),
	}
}

func jobFromFlat(v any) *jobs.Job {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	m := make(map[string]string, len(arr)/2)
	for i := 0; i+1 < len(arr); i += 2 {
		k, _ := arr[i].(string)
		val, _ := arr[i+1].(string)
		m[k] = val
	}
	return jobFromHash(m)
}

func (s *Store) claimMsg(ctx context.Context, stream string, msg redis.XMessage, owner string, lease time.Duration) (*jobs.Job, error) {
	id, _ := msg.Values["id"].(string)
	now := s.now() // after the read: the job may be younger than the Claim call
	v, err := redisClaim.Run(ctx, s.rdb, nil, s.argv(msg.ID, id, owner, jobrow.MS(now), jobrow.MS(now.Add(lease)), stream)...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: claim %s: %w", id, err)
	}
	return jobFromFlat(v), nil
}

func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration) (*jobs.Job, error) {
	if err := s.EnsureGroups(ctx); err != nil {
		return nil, err
	}
	if err := redisPromote.Run(ctx, s.rdb, nil, s.argv(jobrow.MS(s.now()))...).Err(); err != nil {
		return nil, fmt.Errorf("jobs: promote due retries: %w", err)
	}
	// Jobs of dead workers first: pending messages idle for a lease.
	idle := s.idle
	if idle <= 0 {
		idle = lease
	}
	// One entry at a time: XAUTOCLAIM resets the idle time of every entry
	// it moves, so taking ten and running one would leave nine waiting a
	// whole lease more before anyone reclaims them.
	for _, q := range s.streams() {
		start := "0-0"
		for range 16 { // skip entries of canceled, finished or live jobs
			msgs, next, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
				Stream: q, Group: redisGroup, Consumer: owner, MinIdle: idle, Start: start, Count: 1,
			}).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				if strings.Contains(err.Error(), "NOGROUP") {
					s.grouped.Store(false) // created again by the next Claim
				}
				return nil, fmt.Errorf("jobs: xautoclaim %s: %w", q, err)
			}
			for _, m := range msgs {
				if j, err := s.claimMsg(ctx, q, m, owner, lease); j != nil || err != nil {
					return j, err
				}
			}
			if next == "" || next == "0-0" {
				break
			}
			start = next
		}
	}
	for _, q := range s.streams() {
		for range 16 { // skip messages of canceled or finished jobs
			streams, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
				Group: redisGroup, Consumer: owner, Streams: []string{q, ">"}, Count: 1, Block: -1,
			}).Result()
			if errors.Is(err, redis.Nil) || err == nil && (len(streams) == 0 || len(streams[0].Messages) == 0) {
				break
			}
			if err != nil {
				if strings.Contains(err.Error(), "NOGROUP") {
					s.grouped.Store(false) // created again by the next Claim
				}
				return nil, fmt.Errorf("jobs: xreadgroup %s: %w", q, err)
			}
			if j, err := s.claimMsg(ctx, q, streams[0].Messages[0], owner, lease); j != nil || err != nil {
				return j, err
			}
		}
	}
	return nil, nil
}

func (s *Store) Renew(ctx context.Context, id, owner string, lease time.Duration) error {
	n, err := redisRenew.Run(ctx, s.rdb, nil, s.argv(id, owner, jobrow.MS(s.now().Add(lease)))...).Int()
	if err != nil {
		return fmt.Errorf("jobs: renew %s: %w", id, err)
	}
	if n == 0 {
		return jobs.ErrLeaseLost
	}
	return nil
}

func (s *Store) Finish(ctx context.Context, id, owner string, out jobs.Outcome) error {
	if err := out.Check(id); err != nil {
		return err
	}
	n, err := redisFinish.Run(ctx, s.rdb, nil, s.argv(id, owner, string(out.Status), jobrow.NullJSON(out.Result), out.Error,
		jobrow.MS(out.NextAt), jobrow.MS(out.KeepUntil), jobrow.MS(s.now()))...).Int()
	if err != nil {
		return fmt.Errorf("jobs: finish %s: %w", id, err)
	}
	if n == 0 {
		return jobs.ErrLeaseLost
	}
	return nil
}

func (s *Store) Wake(ctx context.Context) (int, error) {
	n, err := redisWake.Run(ctx, s.rdb, nil, s.argv(jobrow.MS(s.now()))...).Int()
	if err != nil {
		return 0, fmt.Errorf("jobs: wake: %w", err)
	}
	return n, nil
}

// Wakes calls fn whenever any instance sharing the queue woke its waiting
// jobs ([Store.Wake] publishes on prefix+"wake"), until ctx is done: a
// [jobs.Pool] then claims at once instead of at its next poll. It calls
// ready once Redis has confirmed the subscription (or failed to: the
// subscription is then retried). It implements [jobs.Waker].
//
// A store made with [Options].LaterGroups that has not reached Redis
// since gives up at once (ready is called before subscribing): a hub
// that started while Redis was away does not wait out the client's
// timeouts for it.
func (s *Store) Wakes(ctx context.Context, ready, fn func()) {
	var once sync.Once
	readyOnce := func() { once.Do(ready) }
	if s.later && !s.grouped.Load() {
		readyOnce()
	}
	sub := s.rdb.Subscribe(ctx, s.p+"wake")
	defer sub.Close()
	// The first answer on a new subscription is its confirmation; wakes
	// published after it wait on the connection for the channel below.
	_, _ = sub.Receive(ctx)
	readyOnce()
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			fn()
		}
	}
}

func (s *Store) Transition(ctx context.Context, id string, from, to jobs.Status, reason string, keepUntil time.Time) (*jobs.Job, error) {
	v, err := redisTransition.Run(ctx, s.rdb, nil, s.argv(id, string(from), string(to), reason, jobrow.MS(keepUntil), jobrow.MS(s.now()))...).Slice()
	if err != nil {
		return nil, fmt.Errorf("jobs: %s→%s %s: %w", from, to, id, err)
	}
	switch v[0].(int64) {
	case 0:
		return nil, fmt.Errorf("%w: %s", jobs.ErrNotFound, id)
	case 1:
		return nil, fmt.Errorf("%w: job %s is %s, not %s", jobs.ErrConflict, id, v[1], from)
	}
	return jobFromFlat(v[1]), nil
}

func (s *Store) Events(ctx context.Context, tenant string, after int64, limit int) ([]jobs.Event, error) {
	if limit <= 0 {
		limit = 100
	}
	key := s.p + "ev"
	if tenant != "" {
		key += ":" + tenant
	}
	msgs, err := s.rdb.XRangeN(ctx, key, "("+strconv.FormatInt(after, 10)+"-0", "+", int64(limit)).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: events: %w", err)
	}
	evs := make([]jobs.Event, 0, len(msgs))
	for _, m := range msgs {
		seq, _, _ := strings.Cut(m.ID, "-")
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		e := jobs.Event{JobID: str("job_id"), Tenant: str("tenant"), Tool: str("tool"), Status: jobs.Status(str("status")),
			Error: str("error"), Result: jobrow.RawOrNil(str("result"))}
		e.ID, _ = strconv.ParseInt(seq, 10, 64)
		e.Attempts, _ = strconv.Atoi(str("attempts"))
		at, _ := strconv.ParseInt(str("at"), 10, 64)
		e.At = jobrow.FromMS(at)
		evs = append(evs, e)
	}
	return evs, nil
}

func (s *Store) Purge(ctx context.Context) (int, error) {
	n, err := redisPurge.Run(ctx, s.rdb, nil, s.argv(jobrow.MS(s.now()))...).Int()
	if err != nil {
		return 0, fmt.Errorf("jobs: purge: %w", err)
	}
	return n, nil
}

// ForgetOwner removes owner's consumers from the group when they hold no
// pending entries (a pool that stopped cleanly), so consumers of past
// processes do not pile up. A [jobs.Pool] calls it on a graceful Stop.
func (s *Store) ForgetOwner(ctx context.Context, owner string) error {
	for _, q := range s.streams() {
		pend, err := s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: q, Group: redisGroup, Consumer: owner, Start: "-", End: "+", Count: 1}).Result()
		if err != nil {
			return fmt.Errorf("jobs: xpending %s: %w", q, err)
		}
		if len(pend) > 0 {
			continue
		}
		if err := s.rdb.XGroupDelConsumer(ctx, q, redisGroup, owner).Err(); err != nil {
			return fmt.Errorf("jobs: forget consumer %s: %w", owner, err)
		}
	}
	return nil
}
