// Package backend decides where toolhub keeps its state, in one place.
// [Open] opens every store of a hub from a [Config] and returns them as
// interfaces ([Stores]) with one list of cleanups, closed last first by
// [Stores.Close]; the wiring (internal/app) never asks "is Redis set?".
//
//	st, err := backend.Open(ctx, backend.Config{Data: "./data"}) // embedded
//	st, err := backend.Open(ctx, backend.Config{Data: "./data",
//		Redis: "redis://127.0.0.1:6379/0", Postgres: "postgres://…/toolhub"}) // shared
//	defer st.Close()
//
// # Where each store lives
//
// Two groups, each moved out of the data folder by its own setting:
// Config.Redis moves the call path's state and the queue, Config.Postgres
// moves the records. With neither, toolhub is one binary and one data
// folder (embedded); with both, several hubs behave as one (shared).
//
//	store (Stores field)   embedded (Data = ./data)                 shared                                   package
//	---------------------  ---------------------------------------  ---------------------------------------  -------------------------------
//	Registry               data/registry.db                         PostgreSQL: <schema>.vendor_versions, …  registry/sqlstore, registry/pgstore
//	Approvals              data/registry.db, pending_vendor_changes PostgreSQL: <schema>.pending_vendor_…    approval, approval/pgapproval
//	Keys                   data/keys.db                             PostgreSQL: <schema>.api_keys            auth, auth/pgkeys
//	Audit                  data/audit.jsonl (append-only JSON)      PostgreSQL: <schema>.audit_log           audit, audit/pgaudit
//	Ledger                 data/ledger.db                           PostgreSQL: <schema>.usage_events, …     billing/sqlledger, billing/pgledger
//	Jobs                   data/jobs.db                             Redis Streams: <prefix>jobs:*            hub/jobs/sqlitejobs, redisjobs
//	Tasks, PushConfigs     data/jobs.db, a2a_tasks, a2a_push_…      Redis: <prefix>a2a:*                     a2a/sqlitetasks, a2a/redistasks
//	Cache                  in process (LRU)                         Redis: <prefix>cache:*                   hub/cache
//	Limiter                in process (token buckets)               Redis GCRA: <prefix>limit:*, local       hub/limit
//	                                                                rate/instances while Redis is away
//	Budgets                in process (seeded from the ledger)      Redis: <prefix>budget:*                  billing, billing/redisbudget
//	Volumes                in process (seeded from the ledger)      Redis: <prefix>volume:*                  billing, billing/redisvolume
//	(not a store)          data/spill/usage: usage events the ledger could not take yet, in every profile
//
// Records (first five rows) follow Config.Postgres; state (the rest)
// follows Config.Redis. Redis is reached through two clients: the call
// path's fail fast (100 ms, no retries; each of those stores has a local
// fallback), the queue's wait and retry (jobs and A2A tasks have none).
// RegistryChanges follows the PostgreSQL registry's notifications, so a
// vendor registered on one hub is applied on all.
//
// # Starting while a shared store is away
//
// Open does not fail for a Redis or PostgreSQL that does not answer within
// Config.FirstTry (refused, timed out, reset): the PostgreSQL stores answer
// [AwayError] until they are opened, the queue creates its consumer group
// when Redis answers, and [Stores.Health] follows each configured store
// (joined in the background, retried from 100 ms doubling to 5 s). A DSN or
// URL that does not parse, or a store that answers with an error of its
// own (a wrong password, a missing database), still fails Open.
//
// # Opening files and databases
//
// Every SQLite file is opened by sqlitedb.Open (one escaped file: URI,
// WAL, busy_timeout, foreign_keys, synchronous NORMAL, BEGIN IMMEDIATE, one
// pool policy); every PostgreSQL pool by pgdb.Open (schema check,
// search_path, connect timeout), whether a store is opened here or by a
// command such as `toolhub report`.
package backend
