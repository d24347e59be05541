// Package taskstoretest is the contract suite of toolhub's A2A task
// stores ([a2a.TaskStore] with its [a2a.PushConfigStore]): the SDK's
// in-memory store as a2a.NewServer builds it, a2a/sqlitetasks and
// a2a/redistasks all pass it; a store that lists its job-backed tasks
// (JobTasks) is checked at that too.
//
//	func TestContract(t *testing.T) {
//		taskstoretest.Run(t, func(t *testing.T, now func() time.Time) (a2a.TaskStore, a2a.PushConfigStore) {
//			s := redistasks.New(rdb, &a2a.TaskStoreOptions{Now: now, Prefix: prefix})
//			return s, s.PushConfigs()
//		})
//	}
package taskstoretest

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/a2a/internal/taskrow"
)

// Opener returns an empty store (and its push-config store) whose clock
// is now.
type Opener func(t *testing.T, now func() time.Time) (a2a.TaskStore, a2a.PushConfigStore)

type jobTaskLister interface {
	JobTasks(ctx context.Context) ([]a2a.JobTask, error)
}

// Run is the one suite every task store passes.
func Run(t *testing.T, open Opener) {
	t.Run("Tasks", func(t *testing.T) { testTasks(t, open) })
	t.Run("PushConfigs", func(t *testing.T) { testPushConfigs(t, open) })
	s, _ := open(t, time.Now)
	if _, ok := s.(jobTaskLister); ok {
		t.Run("JobTasks", func(t *testing.T) { testJobTasks(t, open) })
	}
}

// stepClock moves one millisecond at each reading, so that every store
// write has its own time and ListTasks' order is known.
func stepClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

// NewTask returns a task with a history, an artifact and metadata.
func NewTask(id, contextID string, state sdk.TaskState) *sdk.Task {
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &sdk.Task{
		ID: sdk.TaskID(id), ContextID: contextID,
		Status:    sdk.TaskStatus{State: state, Timestamp: &ts},
		History:   []*sdk.Message{sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("hello "+id))},
		Artifacts: []*sdk.Artifact{{ID: "a1", Name: "result", Parts: []*sdk.Part{sdk.NewDataPart(map[string]any{"n": 1.0})}}},
		Metadata:  map[string]any{"k": "v"},
	}
}

func taskJSON(t *testing.T, task *sdk.Task) string {
	t.Helper()
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testTasks(t *testing.T, open Opener) {
	store, _ := open(t, stepClock())
	a, b := taskrow.WithTenant(t.Context(), "a"), taskrow.WithTenant(t.Context(), "b")
	createAndUpdate(t, store, a)
	seedTasks(t, store, a, b)
	l := lister{t, store}
	l.check("a, all", a, &sdk.ListTasksRequest{}, []string{"t5", "t4", "t3", "t2", "t1"})
	l.check("a, pages of 2", a, &sdk.ListTasksRequest{PageSize: 2}, []string{"t5", "t4", "t3", "t2", "t1"})
	l.check("b", b, &sdk.ListTasksRequest{PageSize: 1}, []string{"u2", "u1"})
	l.check("a, context c1", a, &sdk.ListTasksRequest{ContextID: "c1"}, []string{"t1"})
	l.check("a, failed", a, &sdk.ListTasksRequest{Status: sdk.TaskStateFailed}, []string{"t4"})
	later := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	l.check("a, status after 2027", a, &sdk.ListTasksRequest{StatusTimestampAfter: &later}, nil)

	// An update moves a task to the front.
	st, _ := store.Get(a, "t2")
	st.Task.Status.State = sdk.TaskStateCanceled
	if _, err := store.Update(a, &taskstore.UpdateRequest{Task: st.Task, Event: st.Task, PrevVersion: st.Version}); err != nil {
		t.Fatal(err)
	}
	l.check("a, after updating t2", a, &sdk.ListTasksRequest{PageSize: 3}, []string{"t2", "t5", "t4", "t3", "t1"})

	listedTasks(t, store, a)
}

// createAndUpdate: a create, a second create of the same id, and
// optimistic concurrency on update; t1 ends at version 3, working.
func createAndUpdate(t *testing.T, store a2a.TaskStore, a context.Context) {
	// Create, and a second create of the same id.
	t1 := NewTask("t1", "c1", sdk.TaskStateSubmitted)
	v, err := store.Create(a, t1)
	if err != nil || v != 1 {
		t.Fatalf("Create = %v, %v; want version 1", v, err)
	}
	if _, err := store.Create(a, NewTask("t1", "c1", sdk.TaskStateSubmitted)); !errors.Is(err, taskstore.ErrTaskAlreadyExists) {
		t.Errorf("second Create: %v, want ErrTaskAlreadyExists", err)
	}
	want := taskJSON(t, t1)
	t1.Metadata["k"] = "changed after Create" // the store keeps its own copy
	got, err := store.Get(a, "t1")
	if err != nil || got.Version != 1 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if d := cmp.Diff(want, taskJSON(t, got.Task)); d != "" {
		t.Errorf("stored task (-want +got):\n%s", d)
	}
	if _, err := store.Get(a, "nope"); !errors.Is(err, sdk.ErrTaskNotFound) {
		t.Errorf("Get unknown: %v, want ErrTaskNotFound", err)
	}

	// Optimistic concurrency on Update.
	got.Task.Status.State = sdk.TaskStateWorking
	v2, err := store.Update(a, &taskstore.UpdateRequest{Task: got.Task, Event: got.Task, PrevVersion: 1})
	if err != nil || v2 != 2 {
		t.Fatalf("Update = %v, %v; want version 2", v2, err)
	}
	if _, err := store.Update(a, &taskstore.UpdateRequest{Task: got.Task, Event: got.Task, PrevVersion: 1}); !errors.Is(err, taskstore.ErrConcurrentModification) {
		t.Errorf("stale Update: %v, want ErrConcurrentModification", err)
	}
	if v3, err := store.Update(a, &taskstore.UpdateRequest{Task: got.Task, Event: got.Task}); err != nil || v3 != 3 {
		t.Errorf("unconditional Update = %v, %v; want version 3", v3, err)
	}
	if _, err := store.Update(a, &taskstore.UpdateRequest{Task: NewTask("nope", "c", sdk.TaskStateWorking), PrevVersion: 1}); !errors.Is(err, sdk.ErrTaskNotFound) {
		t.Errorf("Update unknown: %v, want ErrTaskNotFound", err)
	}
	if g, _ := store.Get(a, "t1"); g == nil || g.Version != 3 || g.Task.Status.State != sdk.TaskStateWorking {
		t.Errorf("after updates: %+v", g)
	}

}

// seedTasks gives tenant a t1..t5 and b u1..u2; t1 was updated last of
// a's before t2..t5 were created.
func seedTasks(t *testing.T, store a2a.TaskStore, a, b context.Context) {
	for _, id := range []string{"t2", "t3", "t4", "t5"} {
		state := sdk.TaskStateCompleted
		if id == "t4" {
			state = sdk.TaskStateFailed
		}
		if _, err := store.Create(a, NewTask(id, "c2", state)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"u1", "u2"} {
		if _, err := store.Create(b, NewTask(id, "c1", sdk.TaskStateCompleted)); err != nil {
			t.Fatal(err)
		}
	}
}

// lister lists a tenant's tasks page by page.
type lister struct {
	t     *testing.T
	store a2a.TaskStore
}

// ids lists every page of req: the task ids in order and the total size
// the pages agree on.
func (l lister) ids(ctx context.Context, req *sdk.ListTasksRequest) ([]string, int) {
	t, store := l.t, l.store
	t.Helper()
	var out []string
	total := -1
	for range 10 {
		resp, err := store.List(ctx, req)
		if err != nil {
			t.Fatalf("List(%+v): %v", req, err)
		}
		if total >= 0 && resp.TotalSize != total {
			t.Errorf("TotalSize changed between pages: %d, %d", total, resp.TotalSize)
		}
		total = resp.TotalSize
		for _, tk := range resp.Tasks {
			out = append(out, string(tk.ID))
		}
		if resp.NextPageToken == "" {
			return out, total
		}
		req.PageToken = resp.NextPageToken
	}
	t.Fatal("List pages do not end")
	return nil, 0
}

func (l lister) check(name string, ctx context.Context, req *sdk.ListTasksRequest, want []string) {
	l.t.Helper()
	got, total := l.ids(ctx, req)
	if d := cmp.Diff(want, got); d != "" {
		l.t.Errorf("%s (-want +got):\n%s", name, d)
	}
	if total != len(want) {
		l.t.Errorf("%s: TotalSize %d, want %d", name, total, len(want))
	}
}

// listedTasks: a listed task has its artifacts only when asked, its
// history trimmed; a page too large or a made-up token is refused.
func listedTasks(t *testing.T, store a2a.TaskStore, a context.Context) {
	zero := 0
	resp, err := store.List(a, &sdk.ListTasksRequest{PageSize: 1, HistoryLength: &zero})
	if err != nil || len(resp.Tasks) != 1 {
		t.Fatalf("List = %+v, %v", resp, err)
	}
	if tk := resp.Tasks[0]; len(tk.Artifacts) != 0 || len(tk.History) != 0 {
		t.Errorf("listed task without IncludeArtifacts, history 0: %d artifacts, %d messages", len(tk.Artifacts), len(tk.History))
	}
	resp, _ = store.List(a, &sdk.ListTasksRequest{PageSize: 1, IncludeArtifacts: true})
	if tk := resp.Tasks[0]; len(tk.Artifacts) != 1 || len(tk.History) != 1 {
		t.Errorf("listed task with IncludeArtifacts: %d artifacts, %d messages", len(tk.Artifacts), len(tk.History))
	}
	if _, err := store.List(a, &sdk.ListTasksRequest{PageSize: 101}); err == nil {
		t.Error("PageSize 101: no error")
	}
	if _, err := store.List(a, &sdk.ListTasksRequest{PageToken: "not a token"}); err == nil {
		t.Error("a made-up page token: no error")
	}
}

func testPushConfigs(t *testing.T, open Opener) {
	_, ps := open(t, stepClock())
	ctx := t.Context()
	if got, err := ps.List(ctx, "t1"); err != nil || len(got) != 0 {
		t.Errorf("List of a task without configs = %v, %v", got, err)
	}
	saved, err := ps.Save(ctx, "t1", &sdk.PushConfig{URL: "https://hooks.example/a", Token: "tok"})
	if err != nil || saved.ID == "" || saved.TaskID != "t1" {
		t.Fatalf("Save = %+v, %v; want an id", saved, err)
	}
	if _, err := ps.Save(ctx, "t1", &sdk.PushConfig{ID: "p2", URL: "https://hooks.example/b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Save(ctx, "t1", &sdk.PushConfig{ID: "p2", URL: "https://hooks.example/b2"}); err != nil { // replaces
		t.Fatal(err)
	}
	if _, err := ps.Save(ctx, "t2", &sdk.PushConfig{ID: "p2", URL: "https://hooks.example/other"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Save(ctx, "t1", &sdk.PushConfig{URL: "not a url"}); !errors.Is(err, sdk.ErrInvalidParams) {
		t.Errorf("Save of a bad URL: %v, want invalid params", err)
	}
	got, err := ps.Get(ctx, "t1", "p2")
	if err != nil || got.URL != "https://hooks.example/b2" || got.TaskID != "t1" {
		t.Errorf("Get = %+v, %v", got, err)
	}
	if _, err := ps.Get(ctx, "t1", "nope"); !errors.Is(err, push.ErrPushConfigNotFound) {
		t.Errorf("Get unknown: %v, want ErrPushConfigNotFound", err)
	}
	list, err := ps.List(ctx, "t1")
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	urls := map[string]string{}
	for _, c := range list {
		urls[c.ID] = c.URL
	}
	if d := cmp.Diff(map[string]string{saved.ID: "https://hooks.example/a", "p2": "https://hooks.example/b2"}, urls); d != "" {
		t.Errorf("listed (-want +got):\n%s", d)
	}
	if err := ps.Delete(ctx, "t1", saved.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := ps.List(ctx, "t1"); len(list) != 1 || list[0].ID != "p2" {
		t.Errorf("after Delete: %v", list)
	}
	if err := ps.DeleteAll(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if list, _ := ps.List(ctx, "t1"); len(list) != 0 {
		t.Errorf("after DeleteAll: %v", list)
	}
	if list, _ := ps.List(ctx, "t2"); len(list) != 1 {
		t.Errorf("another task's configs after DeleteAll: %v", list)
	}
}

// testJobTasks: a durable store lists unfinished tasks that follow a job,
// so a restarted server resumes them.
func testJobTasks(t *testing.T, open Opener) {
	store, _ := open(t, stepClock())
	l, ok := store.(jobTaskLister)
	if !ok {
		t.Fatalf("%T has no JobTasks", store)
	}
	ctx := taskrow.WithTenant(t.Context(), "acme")
	jt := NewTask("t1", "c", sdk.TaskStateWorking)
	jt.Metadata[taskrow.JobIDKey] = "job_1"
	if _, err := store.Create(ctx, jt); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, NewTask("t2", "c", sdk.TaskStateWorking)); err != nil {
		t.Fatal(err)
	}
	got, err := l.JobTasks(ctx)
	if d := cmp.Diff([]a2a.JobTask{{TaskID: "t1", JobID: "job_1", Tenant: "acme"}}, got); err != nil || d != "" {
		t.Errorf("JobTasks (-want +got):\n%s %v", d, err)
	}
	jt.Status.State = sdk.TaskStateCompleted
	if _, err := store.Update(ctx, &taskstore.UpdateRequest{Task: jt, Event: jt, PrevVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := l.JobTasks(ctx); err != nil || len(got) != 0 {
		t.Errorf("JobTasks after the task completed = %v, %v", got, err)
	}
}
