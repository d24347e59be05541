package backend

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/a2a/redistasks"
	"github.com/toolhub/toolhub/a2a/sqlitetasks"
	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/approval/sqliteapproval"
	"github.com/toolhub/toolhub/audit"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/auth/pgkeys"
	"github.com/toolhub/toolhub/auth/sqlitekeys"
	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/redisbudget"
	"github.com/toolhub/toolhub/billing/redisvolume"
	"github.com/toolhub/toolhub/billing/sqlledger"
	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/hub/cache/rediscache"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/jobs/redisjobs"
	"github.com/toolhub/toolhub/hub/jobs/sqlitejobs"
	"github.com/toolhub/toolhub/hub/limit"
	"github.com/toolhub/toolhub/hub/limit/redislimit"
	"github.com/toolhub/toolhub/internal/x/pgdb"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/pgstore"
	"github.com/toolhub/toolhub/registry/sqlstore"
)

// Config says where state lives. Redis and Postgres each move their group
// of stores out of the data folder (see the package doc's table); the
// data folder is used in every profile (the meter's spill files, and the
// stores of a group whose shared backend is not set).
type Config struct {
	// Data is the data folder; created if missing. Required.
	Data string
	// Redis (redis://host:port/db) shares the call path's state and the
	// queue: rate limits, result cache, budgets, tier volumes, jobs, A2A
	// tasks. "" keeps them in process and in Data/jobs.db.
	Redis string
	// RedisPrefix starts every Redis key ("" : none), so hubs of several
	// deployments can share one Redis.
	RedisPrefix string
	// Postgres (a pgx DSN) shares the records: registry, ledger, API
	// keys, audit log, pending approvals. "" keeps them in Data.
	Postgres string
	// Schema holds the PostgreSQL tables; "" means "toolhub".
	Schema string
	// Instances is how many hubs share Redis: while Redis is away each
	// enforces rate/Instances locally. Zero means 1.
	Instances int
	// FailOpen admits every call while Redis is away instead of falling
	// back to local limits.
	FailOpen bool
	// TaskKeep is how long a finished A2A task is kept (a job result's
	// time to live); zero means the task store's default.
	TaskKeep time.Duration
	// Logger gets the shared stores' background trouble (a lost listener,
	// Redis away and back). Nil means slog.Default().
	Logger *slog.Logger
	// FirstTry bounds the first attempt to reach Redis and PostgreSQL at
	// Open; a store that does not answer within it is joined in the
	// background (see [Stores.Health]). Zero means 1 s.
	FirstTry time.Duration
	// Now is the clock of [Stores.Health]; nil means time.Now.
	Now func() time.Time
}

// Stores are every store of a hub, as interfaces. Each field is set (the
// in-process ones too); the caller wires them and closes them with
// [Stores.Close], never one by one.
type Stores struct {
	Registry  registry.Store // vendors registered at run time
	Ledger    billing.Ledger // usage events
	Keys      auth.Store     // API keys
	Audit     audit.Log      // who changed what
	Approvals approval.Store // vendor changes waiting for an operator

	Jobs        jobs.Store          // the durable queue
	Tasks       a2a.TaskStore       // toolhub's own A2A tasks
	PushConfigs a2a.PushConfigStore // their push-notification configs

	Cache   cache.Cache           // results: last known good, stale-while-revalidate
	Limiter limit.Limiter         // vendor and tenant rate limits
	Budgets billing.BudgetStore   // budget reservations
	Volumes billing.VolumeCounter // monthly volumes of tiered prices

	// RegistryChanges calls changed whenever another hub sharing the
	// registry changes a vendor, until ctx ends. With an embedded
	// registry no other hub writes it: it waits for ctx and returns nil.
	RegistryChanges func(ctx context.Context, changed func()) error

	// Profile names where each group lives, for the start-up log:
	// "embedded" or "redis" / "postgres".
	Profile struct{ State, Records string }

	// Health follows Redis and PostgreSQL when they are configured: a hub
	// starts while either is away (its stores answer [AwayError] until it
	// is joined) and joins it in the background.
	Health *Health

	cleanups Cleanups
	watches  []func(context.Context) // started at the end of Open
}

// Close closes every store, the last opened first, then the Redis
// clients. It may be called more than once.
func (s *Stores) Close() error { return s.cleanups.Close() }

// Open opens every store where c says, creating files, schemas and
// tables as needed. When one fails, what was opened is closed again.
func Open(ctx context.Context, c Config) (_ *Stores, err error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Data == "" {
		return nil, fmt.Errorf("backend: no data folder")
	}
	if err := os.MkdirAll(c.Data, 0o750); err != nil {
		return nil, fmt.Errorf("data folder %s: %v", c.Data, err)
	}
	if c.FirstTry <= 0 {
		c.FirstTry = time.Second
	}
	s := &Stores{Health: newHealth(c.Now)}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.openRecords(ctx, c); err != nil {
		return nil, err
	}
	if err := s.openState(ctx, c); err != nil {
		return nil, err
	}
	// The watches stop before any store closes.
	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range s.watches {
		wg.Add(1)
		go func() { defer wg.Done(); w(wctx) }()
	}
	s.cleanups.AddFunc(func() { stop(); wg.Wait() })
	return s, nil
}

// openWithin bounds opening the PostgreSQL stores (creating and checking
// their tables) once PostgreSQL answered.
const openWithin = 30 * time.Second

// openPostgresRecords opens the records in PostgreSQL. A bad DSN or schema
// fails at once; a PostgreSQL that does not answer within c.FirstTry does
// not: the stores answer [AwayError] until a watch opens them.
func (s *Stores) openPostgresRecords(ctx context.Context, c Config) error {
	schema := c.Schema
	if schema == "" {
		schema = pgstore.DefaultSchema
	}
	health, _, err := pgdb.Open(ctx, c.Postgres, &pgdb.Options{Schema: schema, MaxConns: 1}) // parses; connects lazily
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	s.cleanups.AddFunc(health.Close)
	s.Health.track(StorePostgres)
	probe := func(ctx context.Context) error { return health.Ping(ctx) }
	// Whether PostgreSQL answers is asked within FirstTry; one that does
	// gets openWithin to create and check the tables (a busy machine).
	first, cancel := context.WithTimeout(ctx, c.FirstTry)
	err = health.Ping(first)
	cancel()
	var p *pgSet
	if err == nil {
		open, cancel := context.WithTimeout(ctx, openWithin)
		p, err = openPostgres(open, c)
		cancel()
	}
	if err == nil {
		s.cleanups.AddFunc(func() { p.cleanups.Close() })
		s.Registry, s.Keys, s.Audit, s.Approvals, s.Ledger = p.reg, p.keys, p.audit, p.approvals, p.ledger
		s.RegistryChanges = func(ctx context.Context, changed func()) error {
			return p.reg.Listen(ctx, func(kind, _ string) {
				if kind == pgstore.KindVendor || kind == pgstore.KindResync {
					changed()
				}
			})
		}
		s.Health.set(StorePostgres, nil)
		s.watches = append(s.watches, func(ctx context.Context) { s.Health.watch(ctx, StorePostgres, probe, nil) })
		return nil
	}
	if !unreachable(err) || ctx.Err() != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	c.Logger.Warn("postgres is away: serving without it (usage events wait in the write-ahead log; keys, registry and reports answer 'away') and joining it in the background",
		"err", err)
	j := newPGJoin(err)
	s.cleanups.AddCloser(j)
	s.Registry, s.Keys, s.Audit, s.Approvals, s.Ledger = awayRegistry{j}, awayKeys{j}, awayAudit{j}, awayApprovals{j}, awayLedger{j}
	s.RegistryChanges = j.listen
	join := func(ctx context.Context) error {
		if err := j.join(ctx, c); err != nil {
			return err
		}
		c.Logger.Info("postgres joined: the records are in PostgreSQL again")
		return nil
	}
	s.watches = append(s.watches, func(ctx context.Context) { s.Health.watch(ctx, StorePostgres, probe, join) })
	return nil
}

// openRecords opens the registry, the ledger, keys, audit log and
// approvals: in PostgreSQL (one schema) or in the data folder.
func (s *Stores) openRecords(ctx context.Context, c Config) error {
	if c.Postgres != "" {
		s.Profile.Records = "postgres"
		return s.openPostgresRecords(ctx, c)
	}
	s.Profile.Records = "embedded"
	reg, err := sqlstore.Open(ctx, filepath.Join(c.Data, "registry.db"), nil)
	if err != nil {
		return err
	}
	s.cleanups.AddCloser(reg)
	s.Registry = reg
	s.RegistryChanges = func(ctx context.Context, _ func()) error { <-ctx.Done(); return nil }
	keys, err := OpenKeys(ctx, c)
	if err != nil {
		return err
	}
	s.cleanups.AddCloser(keys)
	s.Keys = keys
	l := audit.NewFile(filepath.Join(c.Data, "audit.jsonl"))
	s.cleanups.AddCloser(l)
	s.Audit = l
	// Pending approvals are a table of the registry's file.
	p, err := sqliteapproval.Open(ctx, filepath.Join(c.Data, "registry.db"))
	if err != nil {
		return err
	}
	s.cleanups.AddCloser(p)
	s.Approvals = p
	led, err := sqlledger.Open(ctx, filepath.Join(c.Data, "ledger.db"), nil)
	if err != nil {
		return err
	}
	s.cleanups.AddCloser(led)
	s.Ledger = led
	return nil
}

// OpenKeys opens only the API key store of c (the `toolhub keys` command
// works on the keys the hubs use): PostgreSQL when c.Postgres is set,
// else Data/keys.db.
func OpenKeys(ctx context.Context, c Config) (auth.Store, error) {
	if c.Postgres != "" {
		s, err := pgkeys.Open(ctx, c.Postgres, &pgkeys.Options{Schema: c.Schema, Logger: c.Logger})
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return s, nil
	}
	if err := os.MkdirAll(c.Data, 0o750); err != nil {
		return nil, fmt.Errorf("data folder %s: %v", c.Data, err)
	}
	s, err := sqlitekeys.Open(ctx, filepath.Join(c.Data, "keys.db"))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openState opens the call path's state and the queue: in Redis, or in
// process with the queue in Data/jobs.db.
func (s *Stores) openState(ctx context.Context, c Config) error {
	taskOpts := &a2a.TaskStoreOptions{KeepFinished: c.TaskKeep}
	if c.Redis != "" {
		s.Profile.State = "redis"
		fast, durable, err := redisClients(c.Redis)
		if err != nil {
			return err
		}
		s.cleanups.AddCloser(fast)
		s.cleanups.AddCloser(durable)
		// A Redis that does not answer within FirstTry does not fail the
		// start: the queue's consumer group is created when it does.
		// Whether it answers is asked once, bounded by FirstTry: through
		// the queue's client a refused Redis costs some 2 s of dial
		// retries and a hung one 3 s a read, 4 tries.
		jopts := &redisjobs.Options{Prefix: c.RedisPrefix + "jobs:"}
		if err := firstPing(ctx, c.Redis, c.FirstTry); err != nil {
			if !unreachable(err) || ctx.Err() != nil {
				return fmt.Errorf("redis: %w", err)
			}
			c.Logger.Warn("redis is away: serving without it (limits fall back to local ones; jobs and A2A tasks cannot be queued) and joining it in the background",
				"err", err)
			jopts.LaterGroups = true
		}
		first, cancel := context.WithTimeout(ctx, c.FirstTry)
		js, err := redisjobs.New(first, durable, jopts)
		cancel()
		if err != nil {
			return err
		}
		s.cleanups.AddCloser(js)
		s.Jobs = js
		s.Health.track(StoreRedis)
		// Health asks through the queue's client: the call path's 100 ms
		// timeout would call a busy Redis away.
		s.watches = append(s.watches, func(ctx context.Context) {
			s.Health.watch(ctx, StoreRedis, func(ctx context.Context) error { return durable.Ping(ctx).Err() }, js.EnsureGroups)
		})
		taskOpts.Prefix = c.RedisPrefix + "a2a:"
		ts := redistasks.New(durable, taskOpts)
		s.cleanups.AddCloser(ts)
		s.Tasks, s.PushConfigs = ts, ts.PushConfigs()
		s.Cache = rediscache.New(fast, &rediscache.Options{Prefix: c.RedisPrefix + "cache:"})
		mode := limit.FallbackLocal
		if c.FailOpen {
			mode = limit.FailOpen
		}
		s.Limiter = limit.NewFallback(redislimit.New(fast, &redislimit.Options{Prefix: c.RedisPrefix + "limit:"}),
			&limit.FallbackOptions{Mode: mode, Instances: c.Instances, Logger: c.Logger})
		s.Budgets = redisbudget.New(fast, &redisbudget.Options{Prefix: c.RedisPrefix + "budget:"})
		// Tier volumes shared by every hub on this Redis, local while it is away.
		s.Volumes = redisvolume.New(fast, &redisvolume.Options{Prefix: c.RedisPrefix + "volume:", Logger: c.Logger})
		return nil
	}
	s.Profile.State = "embedded"
	js, err := sqlitejobs.Open(ctx, filepath.Join(c.Data, "jobs.db"), nil)
	if err != nil {
		return err
	}
	s.cleanups.AddCloser(js)
	s.Jobs = js
	// A2A tasks keep their tables in the job database, through its
	// connection (which js closes).
	ts, err := sqlitetasks.New(ctx, js.DB(), taskOpts)
	if err != nil {
		return err
	}
	s.cleanups.AddCloser(ts)
	s.Tasks, s.PushConfigs = ts, ts.PushConfigs()
	s.Cache = cache.NewMemory(nil)
	s.Limiter = limit.NewLocal(nil)
	s.Budgets = billing.NewLocalBudgetStore(time.Now)
	s.Volumes = billing.NewMemoryVolumes()
	return nil
}

// firstPing asks Redis (url, already parsed by redisClients) for a PING
// once, within d at most: a client of its own, no retries, its deadlines
// those of ctx.
func firstPing(ctx context.Context, url string, d time.Duration) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = d, d, d
	opt.MaxRetries, opt.DialerRetries, opt.PoolSize = -1, 1, 1
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return rdb.Ping(ctx).Err()
}

// redisClients are the two clients of one Redis. On the call path
// (limits, budgets, cache, volumes) a dead Redis must cost a call
// milliseconds, not the client's default dial retries: each of those has
// a fallback that takes over. The durable stores (jobs, A2A tasks) have no
// fallback: a busy machine's slow answer must not fail an enqueue or a
// job's finish, so they wait and retry.
func redisClients(url string) (fast, durable *redis.Client, err error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, fmt.Errorf("redis %q: %v (want redis://host:port/db)", url, err)
	}
	d := *opt
	d.DialTimeout, d.ReadTimeout, d.WriteTimeout = 2*time.Second, 3*time.Second, 3*time.Second
	d.MaxRetries = 3
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
	opt.MaxRetries = -1
	opt.DialerRetries = 1 // go-redis retries a failed dial 5 times, 100 ms apart: 0.5 s per call
	return redis.NewClient(opt), redis.NewClient(&d), nil
}
