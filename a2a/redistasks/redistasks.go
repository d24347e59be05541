// Package redistasks is the shared store of toolhub's A2A tasks and their
// push configs ([a2a.TaskStore], [a2a.PushConfigStore]): instances on one
// Redis see the same tasks.
//
//	tasks := redistasks.New(rdb, &a2a.TaskStoreOptions{Prefix: "toolhub:a2a:"})
//	srv := a2a.NewServer(gw, cat, &a2a.ServerOptions{TaskStore: tasks, PushConfigStore: tasks.PushConfigs()})
package redistasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/redis/go-redis/v9"
	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/a2a/internal/taskrow"
)

// Store is the shared [a2a.TaskStore]: instances on one Redis see the
// same tasks. A task is a hash (prefix+"task:"+id: its JSON, version,
// owner and the fields ListTasks filters on), indexed per tenant by a
// sorted set (prefix+"tasks:"+tenant, scored by last update in ms). A
// finished task expires after KeepFinished (its index entry is dropped
// by the next ListTasks).
// Create and Update are Lua scripts, so the version compare-and-set, the
// task and its index change together. Unfinished tasks that follow a job
// are in the set prefix+"jobtasks". [Store.PushConfigs] keeps
// push-notification configs as one hash per task (prefix+"push:"+id).
//
// Keys are built inside the scripts: a single Redis, not a Cluster.
type Store struct {
	rdb  redis.UniversalClient
	p    string
	now  func() time.Time
	keep time.Duration
}

// New returns a task store on rdb. Closing it does not close
// rdb.
func New(rdb redis.UniversalClient, opts *a2a.TaskStoreOptions) *Store {
	s := &Store{rdb: rdb, p: "toolhub:a2a:", now: opts.Clock(), keep: opts.Keep()}
	if opts != nil && opts.Prefix != "" {
		s.p = opts.Prefix
	}
	return s
}

// Close does nothing: the Redis client is the caller's.
func (s *Store) Close() error { return nil }

// ARGV: P, id, owner, ctx, state, sts, updated(ms), job, json, expire(ms; 0: none)
var redisTaskCreate = redis.NewScript(`
local P = ARGV[1]
local k = P .. 'task:' .. ARGV[2]
if redis.call('EXISTS', k) == 1 then return 0 end
redis.call('HSET', k, 'owner', ARGV[3], 'ctx', ARGV[4], 'state', ARGV[5], 'sts', ARGV[6], 'upd', ARGV[7], 'ver', 1, 'job', ARGV[8], 'json', ARGV[9])
redis.call('ZADD', P .. 'tasks:' .. ARGV[3], ARGV[7], ARGV[2])
if ARGV[8] ~= '' then redis.call('SADD', P .. 'jobtasks', ARGV[2]) end
if ARGV[10] ~= '0' then redis.call('PEXPIRE', k, ARGV[10]) end
return 1
`)

// ARGV: P, id, prev, ctx, state, sts, updated(ms), job, json, expire(ms; 0: none)
var redisTaskUpdate = redis.NewScript(`
local P = ARGV[1]
local k = P .. 'task:' .. ARGV[2]
local f = redis.call('HMGET', k, 'ver', 'owner')
if not f[1] then return -1 end
if ARGV[3] ~= '0' and f[1] ~= ARGV[3] then return -2 end
local v = redis.call('HINCRBY', k, 'ver', 1)
redis.call('HSET', k, 'ctx', ARGV[4], 'state', ARGV[5], 'sts', ARGV[6], 'upd', ARGV[7], 'job', ARGV[8], 'json', ARGV[9])
redis.call('ZADD', P .. 'tasks:' .. f[2], ARGV[7], ARGV[2])
if ARGV[8] ~= '' then redis.call('SADD', P .. 'jobtasks', ARGV[2]) else redis.call('SREM', P .. 'jobtasks', ARGV[2]) end
if ARGV[10] ~= '0' then
	redis.call('PEXPIRE', k, ARGV[10])
	redis.call('PEXPIRE', P .. 'push:' .. ARGV[2], ARGV[10])
else
	redis.call('PERSIST', k)
end
return v
`)

func (s *Store) key(id sdk.TaskID) string { return s.p + "task:" + string(id) }

// expire is the TTL in ms of a task written as r: KeepFinished once it is
// finished, else 0 (none).
func (s *Store) expire(r taskrow.Row) int64 {
	if r.Final && s.keep > 0 {
		return max(s.keep.Milliseconds(), 1)
	}
	return 0
}

func (s *Store) Create(ctx context.Context, t *sdk.Task) (taskstore.TaskVersion, error) {
	r, err := taskrow.RowOf(t)
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	n, err := redisTaskCreate.Run(ctx, s.rdb, nil, s.p, string(t.ID), taskrow.Tenant(ctx), r.ContextID, r.State, r.StatusTS,
		s.now().UnixMilli(), r.JobID, r.JSON, s.expire(r)).Int()
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("a2a: task store: create %s: %w", t.ID, err)
	}
	if n == 0 {
		return taskstore.TaskVersionMissing, taskstore.ErrTaskAlreadyExists
	}
	return 1, nil
}

func (s *Store) Update(ctx context.Context, u *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	r, err := taskrow.RowOf(u.Task)
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	v, err := redisTaskUpdate.Run(ctx, s.rdb, nil, s.p, string(u.Task.ID), int64(u.PrevVersion), r.ContextID, r.State, r.StatusTS,
		s.now().UnixMilli(), r.JobID, r.JSON, s.expire(r)).Int64()
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("a2a: task store: update %s: %w", u.Task.ID, err)
	}
	switch v {
	case -1:
		return taskstore.TaskVersionMissing, taskrow.NotFound(u.Task.ID)
	case -2:
		return taskstore.TaskVersionMissing, taskstore.ErrConcurrentModification
	}
	return taskstore.TaskVersion(v), nil
}

func (s *Store) Get(ctx context.Context, id sdk.TaskID) (*taskstore.StoredTask, error) {
	f, err := s.rdb.HMGet(ctx, s.key(id), "json", "ver").Result()
	if err != nil {
		return nil, fmt.Errorf("a2a: task store: get %s: %w", id, err)
	}
	b, _ := f[0].(string)
	if b == "" {
		return nil, taskrow.NotFound(id)
	}
	v, _ := strconv.ParseInt(fmt.Sprint(f[1]), 10, 64)
	return taskrow.Stored([]byte(b), v)
}

// List lists the caller's tasks, most recently updated first. It reads
// the tenant's whole index to filter and count (TotalSize), then the JSON
// of one page.
func (s *Store) List(ctx context.Context, req *sdk.ListTasksRequest) (*sdk.ListTasksResponse, error) {
	size, cu, cid, err := taskrow.ListPage(req)
	if err != nil {
		return nil, err
	}
	zs, err := s.rdb.ZRevRangeWithScores(ctx, s.p+"tasks:"+taskrow.Tenant(ctx), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("a2a: task store: list: %w", err)
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(zs))
	for i, z := range zs {
		cmds[i] = pipe.HMGet(ctx, s.key(sdk.TaskID(z.Member.(string))), "ctx", "state", "sts")
	}
	if len(zs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("a2a: task store: list: %w", err)
		}
	}
	type hit struct {
		id      string
		updated int64
	}
	var hits []hit
	var gone []any
	for i, z := range zs {
		f, _ := cmds[i].Result()
		if len(f) < 3 || f[1] == nil {
			gone = append(gone, z.Member) // the task expired
			continue
		}
		str := func(v any) string { s, _ := v.(string); return s }
		sts, _ := strconv.ParseInt(str(f[2]), 10, 64)
		if taskrow.Keep(req, str(f[0]), str(f[1]), sts) {
			hits = append(hits, hit{z.Member.(string), int64(z.Score)})
		}
	}
	if len(gone) > 0 {
		_ = s.rdb.ZRem(ctx, s.p+"tasks:"+taskrow.Tenant(ctx), gone...).Err()
	}
	resp := &sdk.ListTasksResponse{Tasks: []*sdk.Task{}, TotalSize: len(hits), PageSize: size}
	start := 0
	if cu >= 0 {
		start = slices.IndexFunc(hits, func(h hit) bool { return h.updated < cu || h.updated == cu && h.id < cid })
		if start < 0 {
			start = len(hits)
		}
	}
	page := hits[start:]
	if len(page) > size {
		last := page[size-1]
		resp.NextPageToken = taskrow.PageToken(last.updated, last.id)
		page = page[:size]
	}
	for _, h := range page {
		st, err := s.Get(ctx, sdk.TaskID(h.id))
		if errors.Is(err, sdk.ErrTaskNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		taskrow.Shape(st.Task, req)
		resp.Tasks = append(resp.Tasks, st.Task)
	}
	return resp, nil
}

// JobTasks lists the unfinished tasks that follow a job.
func (s *Store) JobTasks(ctx context.Context) ([]a2a.JobTask, error) {
	ids, err := s.rdb.SMembers(ctx, s.p+"jobtasks").Result()
	if err != nil {
		return nil, fmt.Errorf("a2a: task store: job tasks: %w", err)
	}
	slices.Sort(ids)
	var out []a2a.JobTask
	for _, id := range ids {
		f, err := s.rdb.HMGet(ctx, s.key(sdk.TaskID(id)), "job", "owner").Result()
		if err != nil {
			return nil, fmt.Errorf("a2a: task store: job tasks: %w", err)
		}
		job, _ := f[0].(string)
		owner, _ := f[1].(string)
		if job != "" {
			out = append(out, a2a.JobTask{TaskID: sdk.TaskID(id), JobID: job, Tenant: owner})
		}
	}
	return out, nil
}

// PushConfigs returns the push-notification config store under the same
// prefix.
func (s *Store) PushConfigs() a2a.PushConfigStore { return &pushStore{s: s} }

type pushStore struct{ s *Store }

func (p *pushStore) key(task sdk.TaskID) string { return p.s.p + "push:" + string(task) }

func (p *pushStore) Save(ctx context.Context, task sdk.TaskID, c *sdk.PushConfig) (*sdk.PushConfig, error) {
	cp, b, err := taskrow.PushConfigToSave(task, c)
	if err != nil {
		return nil, err
	}
	if err := p.s.rdb.HSet(ctx, p.key(task), cp.ID, b).Err(); err != nil {
		return nil, fmt.Errorf("a2a: push config store: save: %w", err)
	}
	return cp, nil
}

func (p *pushStore) Get(ctx context.Context, task sdk.TaskID, id string) (*sdk.PushConfig, error) {
	b, err := p.s.rdb.HGet(ctx, p.key(task), id).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, push.ErrPushConfigNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("a2a: push config store: get: %w", err)
	}
	return taskrow.DecodePushConfig(b)
}

func (p *pushStore) List(ctx context.Context, task sdk.TaskID) ([]*sdk.PushConfig, error) {
	m, err := p.s.rdb.HGetAll(ctx, p.key(task)).Result()
	if err != nil {
		return nil, fmt.Errorf("a2a: push config store: list: %w", err)
	}
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*sdk.PushConfig, 0, len(ids))
	for _, id := range ids {
		c, err := taskrow.DecodePushConfig([]byte(m[id]))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (p *pushStore) Delete(ctx context.Context, task sdk.TaskID, id string) error {
	if err := p.s.rdb.HDel(ctx, p.key(task), id).Err(); err != nil {
		return fmt.Errorf("a2a: push config store: delete: %w", err)
	}
	return nil
}

func (p *pushStore) DeleteAll(ctx context.Context, task sdk.TaskID) error {
	if err := p.s.rdb.Del(ctx, p.key(task)).Err(); err != nil {
		return fmt.Errorf("a2a: push config store: delete all: %w", err)
	}
	return nil
}

var (
	_ a2a.TaskStore       = (*Store)(nil)
	_ a2a.PushConfigStore = (*pushStore)(nil)
)
