package sqlitetasks

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/a2a/internal/taskrow"
	"github.com/toolhub/toolhub/a2a/taskstoretest"
	"github.com/toolhub/toolhub/hub/jobs/sqlitejobs"
)

func TestContract(t *testing.T) {
	dir := t.TempDir()
	var seq atomic.Int64
	taskstoretest.Run(t, func(t *testing.T, now func() time.Time) (a2a.TaskStore, a2a.PushConfigStore) {
		s := openTasks(t, filepath.Join(dir, fmt.Sprintf("tasks%d.db", seq.Add(1))), &a2a.TaskStoreOptions{Now: now})
		return s, s.PushConfigs()
	})
}

// TestSurvivesReopen: tasks and push configs are in the
// file.
func TestSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.db")
	ctx := taskrow.WithTenant(t.Context(), "acme")
	js, err := sqlitejobs.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, js.DB(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, taskstoretest.NewTask("t1", "c", sdk.TaskStateWorking)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PushConfigs().Save(ctx, "t1", &sdk.PushConfig{ID: "p", URL: "https://hooks.example/x"}); err != nil {
		t.Fatal(err)
	}
	js.Close()
	s = openTasks(t, path, nil)
	if st, err := s.Get(ctx, "t1"); err != nil || st.Task.Status.State != sdk.TaskStateWorking {
		t.Errorf("Get after reopen = %+v, %v", st, err)
	}
	if c, err := s.PushConfigs().Get(ctx, "t1", "p"); err != nil || c.URL != "https://hooks.example/x" {
		t.Errorf("push config after reopen = %+v, %v", c, err)
	}
}

// TestKeepFinished: finished tasks are purged after KeepFinished.
func TestKeepFinished(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	ctx := taskrow.WithTenant(t.Context(), "acme")
	s := openTasks(t, filepath.Join(t.TempDir(), "jobs.db"), &a2a.TaskStoreOptions{Now: clock, KeepFinished: time.Hour})
	done, open := taskstoretest.NewTask("done", "c", sdk.TaskStateCompleted), taskstoretest.NewTask("open", "c", sdk.TaskStateWorking)
	for _, tk := range []*sdk.Task{done, open} {
		if _, err := s.Create(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PushConfigs().Save(ctx, "done", &sdk.PushConfig{ID: "p", URL: "https://hooks.example/x"}); err != nil {
		t.Fatal(err)
	}
	now.Add(int64(2 * time.Hour))
	if _, err := s.Create(ctx, taskstoretest.NewTask("later", "c", sdk.TaskStateSubmitted)); err != nil { // purges
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "done"); !errors.Is(err, sdk.ErrTaskNotFound) {
		t.Errorf("finished task kept past KeepFinished: %v", err)
	}
	if _, err := s.Get(ctx, "open"); err != nil {
		t.Errorf("unfinished task purged: %v", err)
	}
	if l, _ := s.PushConfigs().List(ctx, "done"); len(l) != 0 {
		t.Errorf("push configs of a purged task: %v", l)
	}
}

// openTasks opens a job database at path and a task store in it, as
// toolhub keeps them; both close when t ends.
func openTasks(t *testing.T, path string, opts *a2a.TaskStoreOptions) *Store {
	t.Helper()
	js, err := sqlitejobs.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.Close() })
	s, err := New(t.Context(), js.DB(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
