package app

import (
	"time"

	"github.com/toolhub/toolhub/a2a"
)

// agentTasks gives toolhub's own A2A tasks the stores' task store (with
// the jobs: data/jobs.db, or Redis), so that they survive a restart and
// every instance sees them; a finished task is kept as long as a job's
// result (jobs.result_ttl). A call answered "queued" becomes a task that
// follows its job (o.Jobs).
func (a *App) agentTasks(o *a2a.ServerOptions) {
	o.Jobs = a.Jobs
	// A2A push notifications (tasks/pushNotificationConfig/*): on, sent
	// only through the outbound guard, their URLs vetted by it when set.
	o.PushNotifications = true
	o.PushClient = a.Guard.Client(nil)
	o.PushClient.Timeout = 10 * time.Second
	o.PushCheckURL = a.Guard.CheckURL
	o.TaskStore, o.PushConfigStore = a.stores.Tasks, a.stores.PushConfigs
}
