package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/fallback"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/jobs/sqlitejobs"
	"github.com/toolhub/toolhub/hub/retry"
	"github.com/toolhub/toolhub/internal/x/redistest"
	"github.com/toolhub/toolhub/registry"
)

// jobLab is a gateway whose capability text.queued has one vendor,
// "flaky", that is down until up is set; the capability queues calls no
// vendor answered. The job queue is SQLite; the pool that runs jobs is
// on another Queue over the same store, as another instance would be,
// so the server hears of its changes only through the event feed.
type jobLab struct {
	up     atomic.Bool
	gw     *hub.Gateway
	cat    *registry.Catalog
	store  jobs.Store
	q      *jobs.Queue // the server's
	tasks  TaskStore
	pushes PushConfigStore
}

func newJobLab(t *testing.T, taskStore string) *jobLab {
	t.Helper()
	l := &jobLab{cat: registry.NewCatalog()}
	in := json.RawMessage(`{"type":"object","required":["msg"],"properties":{"msg":{"type":"string"}}}`)
	if errs := l.cat.SetVendorTools("flaky", []registry.ToolDef{{Name: "work", InputSchema: in}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if errs := l.cat.SetCapabilities([]registry.Capability{
		{Name: "text.queued", Description: "Queued when down.", InputSchema: in, Chain: []registry.ChainStep{{Tool: "flaky/work"}}},
	}); len(errs) > 0 {
		t.Fatal(errs)
	}
	flaky := hub.InvokerFunc(func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		if !l.up.Load() {
			return nil, &hub.Error{Code: hub.CodeUnavailable, Vendor: "flaky", Message: "flaky is down"}
		}
		msg := c.Arguments["msg"].(string)
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("done: " + msg)}, Structured: map[string]any{"done": msg}}, nil
	})
	path := filepath.Join(t.TempDir(), "jobs.db")
	js, err := sqlitejobs.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.Close() })
	l.store, l.q = js, jobs.NewQueue(js, nil)
	cfg := fallback.Config{Capabilities: map[string]fallback.CapabilityConfig{"text.queued": {Queue: true}}}
	router := fallback.New(&fallback.Options{Config: cfg, Enqueuer: l.q})
	l.gw = hub.NewGateway(l.cat, hub.UpstreamsFunc(func(v string) (hub.Invoker, bool) { return flaky, v == "flaky" }),
		&hub.Options{DefaultTimeout: time.Minute, Route: router.Route, Logger: quietLogger()})
	switch taskStore {
	case "sqlite": // in the jobs' file, as toolhub keeps it
		s, err := NewSQLiteTasks(t.Context(), js.DB(), nil)
		if err != nil {
			t.Fatal(err)
		}
		l.tasks, l.pushes = s, s.PushConfigs()
	case "redis":
		c := redistest.Client(t)
		s := NewRedisTasks(c, &TaskStoreOptions{Prefix: redistest.Prefix(t, c)})
		l.tasks, l.pushes = s, s.PushConfigs()
	}
	return l
}

// serve starts an A2A server over the lab and returns a Go client of it.
func (l *jobLab) serve(t *testing.T) (*Server, *a2aclient.Client) {
	t.Helper()
	srv := NewServer(l.gw, l.cat, &ServerOptions{Version: "test", Logger: quietLogger(), Tenant: testTenant,
		TaskStore: l.tasks, PushNotifications: true, PushConfigStore: l.pushes, Jobs: l.q, JobPoll: 20 * time.Millisecond})
	t.Cleanup(func() { srv.Close() })
	mux := http.NewServeMux()
	srv.Routes(mux)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	card, err := agentcard.DefaultResolver.Resolve(t.Context(), ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := a2aclient.NewFromCard(t.Context(), card)
	if err != nil {
		t.Fatal(err)
	}
	return srv, client
}

// runJobs starts a worker pool on another Queue over the lab's job store.
func (l *jobLab) runJobs(t *testing.T) {
	t.Helper()
	pool := &jobs.Pool{Store: jobs.NewQueue(l.store, nil), Run: l.gw.Call, Poll: 10 * time.Millisecond, MaxAttempts: 1000,
		Backoff: retry.Policy{Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond}, Logger: quietLogger(), PurgeEvery: -1}
	if err := pool.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Stop(context.Background()) })
}

func queuedMsg(text string) *sdk.SendMessageRequest {
	m := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewDataPart(map[string]any{"msg": text}))
	m.Metadata = map[string]any{"skill": "text.queued"}
	return &sdk.SendMessageRequest{Message: m}
}

// sendQueued sends a call while flaky is down and checks the answer is at
// once a working task that names its job.
func sendQueued(t *testing.T, client *a2aclient.Client, text string) (*sdk.Task, string) {
	t.Helper()
	res, err := client.SendMessage(t.Context(), queuedMsg(text))
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*sdk.Task)
	if !ok || task.Status.State != sdk.TaskStateWorking {
		t.Fatalf("SendMessage of a queued call = %#v, want a working task", res)
	}
	jobID, _ := task.Metadata[jobIDKey].(string)
	if jobID == "" {
		t.Fatalf("working task has no %s: %v", jobIDKey, task.Metadata)
	}
	return task, jobID
}

func waitTask(t *testing.T, client *a2aclient.Client, id sdk.TaskID, want sdk.TaskState) *sdk.Task {
	t.Helper()
	var got *sdk.Task
	waitFor(t, func() bool {
		var err error
		got, err = client.GetTask(t.Context(), &sdk.GetTaskRequest{ID: id})
		return err == nil && got.Status.State == want
	})
	return got
}

func checkJobArtifact(t *testing.T, task *sdk.Task, jobID, msg string) {
	t.Helper()
	if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) == 0 {
		t.Fatalf("completed task artifacts = %+v", task.Artifacts)
	}
	art := task.Artifacts[0]
	var data any
	for _, p := range art.Parts {
		if d, ok := p.Content.(sdk.Data); ok {
			data = d.Value
		}
	}
	if m, _ := data.(map[string]any); m["done"] != msg {
		t.Errorf("artifact data = %v, want done: %s", data, msg)
	}
	if art.Metadata[jobIDKey] != jobID {
		t.Errorf("artifact metadata = %v, want the job id", art.Metadata)
	}
	if prov, _ := art.Metadata["toolhub/provenance"].(map[string]any); prov["vendor"] != "flaky" {
		t.Errorf("provenance = %v", art.Metadata["toolhub/provenance"])
	}
}

// TestQueuedCallIsWorkingTask: all vendors down, the call is queued; the
// A2A client gets a working task at once (and a stream that stays open);
// the vendor comes back, another instance's worker runs the job, and the
// task completes with the job's result as its artifact.
func TestQueuedCallIsWorkingTask(t *testing.T) {
	t.Parallel() // its own stores, servers and peers
	for _, kind := range []string{"sqlite", "redis"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			l := newJobLab(t, kind)
			_, client := l.serve(t)
			task, jobID := sendQueued(t, client, "hello")
			if j, err := l.q.Get(t.Context(), jobID); err != nil || j.Status != jobs.Queued {
				t.Fatalf("job = %+v, %v; want queued", j, err)
			}
			if got := waitTask(t, client, task.ID, sdk.TaskStateWorking); got.Status.Message == nil {
				t.Errorf("working task has no status message")
			}

			// A streaming call of the same kind stays open until its job ends.
			type seen struct {
				states []sdk.TaskState
				job    string
				err    error
			}
			streamed := make(chan seen, 1)
			go func() {
				var s seen
				for ev, err := range client.SendStreamingMessage(context.Background(), queuedMsg("streamed")) {
					if err != nil {
						s.err = err
						break
					}
					switch e := ev.(type) {
					case *sdk.Task:
						s.states = append(s.states, e.Status.State)
					case *sdk.TaskStatusUpdateEvent:
						if id, ok := e.Metadata[jobIDKey].(string); ok {
							s.job = id
						}
						if len(s.states) == 0 || s.states[len(s.states)-1] != e.Status.State {
							s.states = append(s.states, e.Status.State)
						}
					}
				}
				streamed <- s
			}()
			// Both jobs are queued before the vendor comes back.
			waitFor(t, func() bool {
				evs, _ := l.q.Events(t.Context(), "", 0, 100)
				return len(evs) >= 2
			})

			l.up.Store(true)
			l.runJobs(t)
			done := waitTask(t, client, task.ID, sdk.TaskStateCompleted)
			checkJobArtifact(t, done, jobID, "hello")
			if j, err := l.q.Get(t.Context(), jobID); err != nil || j.Status != jobs.Succeeded {
				t.Errorf("job = %+v, %v; want succeeded", j, err)
			}
			var s seen
			select {
			case s = <-streamed:
			case <-time.After(30 * time.Second):
				t.Fatal("the stream did not end with its job")
			}
			if s.err != nil || s.job == "" {
				t.Fatalf("stream: err %v, job %q", s.err, s.job)
			}
			if d := slices.Compare([]sdk.TaskState{sdk.TaskStateSubmitted, sdk.TaskStateWorking, sdk.TaskStateCompleted}, s.states); d != 0 {
				t.Errorf("stream states = %v, want submitted, working, completed", s.states)
			}
			list, err := client.ListTasks(t.Context(), &sdk.ListTasksRequest{Status: sdk.TaskStateCompleted})
			if err != nil || list.TotalSize != 2 {
				t.Errorf("ListTasks(completed) = %+v, %v; want both tasks", list, err)
			}
		})
	}
}

// TestQueuedCallCanceled: CancelTask of a task whose job has not started
// cancels the job and the task.
func TestQueuedCallCanceled(t *testing.T) {
	t.Parallel() // its own stores, servers and peers
	l := newJobLab(t, "sqlite")
	_, client := l.serve(t)
	task, jobID := sendQueued(t, client, "never")
	got, err := client.CancelTask(t.Context(), &sdk.CancelTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != sdk.TaskStateCanceled {
		t.Fatalf("CancelTask = %+v, %v; want canceled", got, err)
	}
	if j, err := l.q.Get(t.Context(), jobID); err != nil || j.Status != jobs.Canceled {
		t.Errorf("job after CancelTask = %+v, %v; want canceled", j, err)
	}
	waitTask(t, client, task.ID, sdk.TaskStateCanceled)
	// Nothing runs the canceled job when the vendor is back.
	l.up.Store(true)
	l.runJobs(t)
	if _, err := client.CancelTask(t.Context(), &sdk.CancelTaskRequest{ID: task.ID}); err != nil {
		t.Errorf("second CancelTask: %v", err)
	}
	if j, _ := l.q.Get(t.Context(), jobID); j.Status != jobs.Canceled {
		t.Errorf("job = %s, want still canceled", j.Status)
	}
}

// TestQueuedCallJobCanceledByOperator: a job canceled outside A2A (the
// jobs API) cancels its task.
func TestQueuedCallJobCanceledByOperator(t *testing.T) {
	t.Parallel() // its own stores, servers and peers
	l := newJobLab(t, "sqlite")
	_, client := l.serve(t)
	task, jobID := sendQueued(t, client, "op")
	if _, err := jobs.NewQueue(l.store, nil).Cancel(t.Context(), jobID, "an operator said no"); err != nil {
		t.Fatal(err)
	}
	got := waitTask(t, client, task.ID, sdk.TaskStateCanceled)
	if got.Status.Message == nil || !containsText(got.Status.Message, "an operator said no") {
		t.Errorf("canceled status = %+v", got.Status.Message)
	}
}

func containsText(m *sdk.Message, s string) bool { return strings.Contains(textOf(m), s) }

// TestQueuedCallSurvivesRestart: the server that took the call stops
// while the job waits; a new server over the same stores resumes
// following the job and completes the task when another instance runs it.
func TestQueuedCallSurvivesRestart(t *testing.T) {
	t.Parallel() // its own stores, servers and peers
	for _, kind := range []string{"sqlite", "redis"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			l := newJobLab(t, kind)
			first, client := l.serve(t)
			task, jobID := sendQueued(t, client, "again")
			first.Close() // the first instance goes away

			second, client2 := l.serve(t)
			if err := second.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := waitTask(t, client2, task.ID, sdk.TaskStateWorking); got.Metadata[jobIDKey] != jobID {
				t.Fatalf("task on the new server = %+v", got)
			}
			// A subscriber on the new server, where no execution runs the task.
			subscribed := make(chan []sdk.TaskState, 1)
			attached := make(chan struct{})
			go func() {
				var states []sdk.TaskState
				for ev, err := range client2.SubscribeToTask(context.Background(), &sdk.SubscribeToTaskRequest{ID: task.ID}) {
					if err != nil {
						states = append(states, sdk.TaskStateUnspecified)
						break
					}
					if tk, ok := ev.(*sdk.Task); ok {
						states = append(states, tk.Status.State)
						if len(states) == 1 {
							close(attached)
						}
					}
				}
				subscribed <- states
			}()
			select {
			case <-attached:
			case states := <-subscribed:
				t.Fatalf("SubscribeToTask ended at once: %v", states)
			}
			l.up.Store(true)
			l.runJobs(t)
			done := waitTask(t, client2, task.ID, sdk.TaskStateCompleted)
			checkJobArtifact(t, done, jobID, "again")
			select {
			case states := <-subscribed:
				if d := slices.Compare([]sdk.TaskState{sdk.TaskStateWorking, sdk.TaskStateCompleted}, states); d != 0 {
					t.Errorf("subscriber saw %v, want working, completed", states)
				}
			case <-time.After(30 * time.Second):
				t.Error("the subscription did not end with the task")
			}
			if _, err := client2.CancelTask(t.Context(), &sdk.CancelTaskRequest{ID: task.ID}); !errors.Is(err, sdk.ErrTaskNotCancelable) {
				t.Errorf("CancelTask of the completed task: %v, want not cancelable", err)
			}
		})
	}
}
