package redistasks

import (
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/a2a/internal/taskrow"
	"github.com/toolhub/toolhub/a2a/taskstoretest"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

func TestContract(t *testing.T) {
	taskstoretest.Run(t, func(t *testing.T, now func() time.Time) (a2a.TaskStore, a2a.PushConfigStore) {
		c := redistest.Client(t)
		s := New(c, &a2a.TaskStoreOptions{Now: now, Prefix: redistest.Prefix(t, c)})
		return s, s.PushConfigs()
	})
}

// TestKeepFinished: a finished task expires after KeepFinished and drops
// out of the index.
func TestKeepFinished(t *testing.T) {
	c := redistest.Client(t)
	p := redistest.Prefix(t, c)
	s := New(c, &a2a.TaskStoreOptions{Prefix: p, KeepFinished: time.Hour})
	ctx := taskrow.WithTenant(t.Context(), "acme")
	tk := taskstoretest.NewTask("t1", "c", sdk.TaskStateWorking)
	if _, err := s.Create(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, p+"task:t1").Val(); ttl != -1 {
		t.Errorf("unfinished task has a TTL: %v", ttl)
	}
	tk.Status.State = sdk.TaskStateCompleted
	if _, err := s.Update(ctx, &taskstore.UpdateRequest{Task: tk, Event: tk, PrevVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, p+"task:t1").Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("finished task TTL = %v, want up to an hour", ttl)
	}
	c.Del(ctx, p+"task:t1") // as if it expired
	if resp, err := s.List(ctx, &sdk.ListTasksRequest{}); err != nil || resp.TotalSize != 0 {
		t.Errorf("List after expiry = %+v, %v", resp, err)
	}
	if n := c.ZCard(ctx, p+"tasks:acme").Val(); n != 0 {
		t.Errorf("index keeps %d expired tasks", n)
	}
}
