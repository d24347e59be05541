package a2a_test

import (
	"context"
	"database/sql"

	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/a2a/redistasks"
	"github.com/toolhub/toolhub/a2a/sqlitetasks"
)

func init() {
	a2a.NewSQLiteTasks = func(ctx context.Context, db *sql.DB, opts *a2a.TaskStoreOptions) (a2a.DurableTaskStore, error) {
		s, err := sqlitetasks.New(ctx, db, opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	a2a.NewRedisTasks = func(rdb redis.UniversalClient, opts *a2a.TaskStoreOptions) a2a.DurableTaskStore {
		return redistasks.New(rdb, opts)
	}
}
