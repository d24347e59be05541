package a2a

import (
	"context"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"

	"github.com/toolhub/toolhub/a2a/internal/taskrow"
)

// PushConfigStore keeps the push-notification configs of toolhub's A2A
// tasks: the a2a-go server's config store interface.
type PushConfigStore = push.ConfigStore

// TaskStoreOptions configure the durable task stores, a2a/sqlitetasks and
// a2a/redistasks.
// A nil *TaskStoreOptions, and every zero field, means the default.
type TaskStoreOptions struct {
	// Now is the clock that orders ListTasks (most recently updated
	// first); nil means time.Now.
	Now func() time.Time
	// Prefix starts every Redis key; empty means "toolhub:a2a:". Instances
	// that share tasks use the same prefix. SQLite ignores it.
	Prefix string
	// KeepFinished is how long a task is kept after it reached a terminal
	// state (with its push configs); zero means forever. toolhub keeps
	// tasks as long as job results.
	KeepFinished time.Duration
}

// Clock is o's Now, or time.Now when o or its Now is nil: the drivers'
// clock.
func (o *TaskStoreOptions) Clock() func() time.Time {
	if o == nil || o.Now == nil {
		return time.Now
	}
	return o.Now
}

// Keep is o's KeepFinished, or zero (forever) when o is nil or it is
// negative.
func (o *TaskStoreOptions) Keep() time.Duration {
	if o == nil || o.KeepFinished < 0 {
		return 0
	}
	return o.KeepFinished
}

// jobIDKey is the task metadata key naming the job a queued call became.
const jobIDKey = taskrow.JobIDKey

// withStoreTenant puts the owner of the tasks stored through ctx in it.
func withStoreTenant(ctx context.Context, tenant string) context.Context {
	return taskrow.WithTenant(ctx, tenant)
}

// storeTenant is the owner withStoreTenant put in ctx.
func storeTenant(ctx context.Context) string { return taskrow.Tenant(ctx) }

// JobTask is an unfinished task that follows a job (a call that was
// queued): the [Server] resumes following it when it starts.
type JobTask struct {
	TaskID sdk.TaskID
	JobID  string
	Tenant string
}

// jobTaskLister is the optional ability of a store to list its unfinished
// job-backed tasks (a2a/sqlitetasks and a2a/redistasks have it).
type jobTaskLister interface {
	JobTasks(ctx context.Context) ([]JobTask, error)
}
