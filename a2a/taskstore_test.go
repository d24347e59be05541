package a2a_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/a2a/internal/taskrow"
	"github.com/toolhub/toolhub/a2a/taskstoretest"
)

// TestTaskStoreContract: the SDK's in-memory store, as NewServer builds
// it, passes the suite the durable stores pass (a2a/sqlitetasks,
// a2a/redistasks run it in their own tests).
func TestTaskStoreContract(t *testing.T) {
	taskstoretest.Run(t, func(t *testing.T, now func() time.Time) (a2a.TaskStore, a2a.PushConfigStore) {
		return taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
			Authenticator: func(ctx context.Context) (string, error) { return taskrow.Tenant(ctx), nil },
			TimeProvider:  now,
		}), push.NewInMemoryStore()
	})
}
