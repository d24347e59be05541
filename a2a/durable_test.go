package a2a

import (
	"context"
	"database/sql"

	"github.com/redis/go-redis/v9"
)

// DurableTaskStore is what the durable task stores (a2a/sqlitetasks,
// a2a/redistasks) offer.
type DurableTaskStore interface {
	TaskStore
	PushConfigs() PushConfigStore
	JobTasks(ctx context.Context) ([]JobTask, error)
}

// The durable task stores' constructors, for the tests of this package
// that run a server over them. The stores import this package, so
// durable_ext_test.go (package a2a_test) sets these from its init.
var (
	NewSQLiteTasks func(ctx context.Context, db *sql.DB, opts *TaskStoreOptions) (DurableTaskStore, error)
	NewRedisTasks  func(rdb redis.UniversalClient, opts *TaskStoreOptions) DurableTaskStore
)
