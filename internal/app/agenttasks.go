package app

import (
	"context"
	"time"

	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/internal/config"
)

// agentTasks puts toolhub's own A2A tasks where the jobs are: in the job
// database (SQLite, data/jobs.db), or in Redis when redis is set, so that
// they survive a restart and every instance sees them; a finished task
// is kept as long as a job's result (jobs.result_ttl). A call answered
// "queued" becomes a task that follows its job (o.Jobs).
func (a *App) agentTasks(ctx context.Context, cfg *config.Config, o *a2a.ServerOptions) error {
	o.Jobs = a.Jobs
	// A2A push notifications (tasks/pushNotificationConfig/*): on, sent
	// only through the outbound guard, their URLs vetted by it when set.
	o.PushNotifications = true
	o.PushClient = a.Guard.Client(nil)
	o.PushClient.Timeout = 10 * time.Second
	o.PushCheckURL = a.Guard.CheckURL
	keep := a.Jobs.ResultTTL() // a finished task is kept as long as a job's result
	if a.redis != nil {
		s := a2a.NewRedisTaskStore(a.redisDurable, &a2a.TaskStoreOptions{Prefix: cfg.RedisPrefix + "a2a:", KeepFinished: keep})
		o.TaskStore, o.PushConfigStore = s, s.PushConfigs()
		return nil
	}
	s, err := a2a.NewSQLiteTaskStore(ctx, a.jobsDB, &a2a.TaskStoreOptions{KeepFinished: keep})
	if err != nil {
		return err
	}
	o.TaskStore, o.PushConfigStore = s, s.PushConfigs()
	return nil
}
