package a2a

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
)

// PushConfigStore keeps the push-notification configs of toolhub's A2A
// tasks: the a2a-go server's config store interface.
type PushConfigStore = push.ConfigStore

// TaskStoreOptions configure [NewSQLiteTaskStore] and [NewRedisTaskStore].
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

func (o *TaskStoreOptions) keep() time.Duration {
	if o == nil || o.KeepFinished < 0 {
		return 0
	}
	return o.KeepFinished
}

func (o *TaskStoreOptions) now() func() time.Time {
	if o == nil || o.Now == nil {
		return time.Now
	}
	return o.Now
}

// The owner of a task is the tenant toolhub's [Server] puts in the context
// of every store call (ctxTenant); a store used alone files every task
// under "". ListTasks lists the caller's tasks only; Get and Update do not
// check the owner (the Server does, through the task's metadata).
type storeTenantKey struct{}

func withStoreTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, storeTenantKey{}, tenant)
}

func storeTenant(ctx context.Context) string {
	t, _ := ctx.Value(storeTenantKey{}).(string)
	return t
}

// jobIDKey is the task metadata key naming the job a queued call became.
const jobIDKey = "toolhub/job_id"

// taskRow is what a store indexes of a task besides its JSON.
type taskRow struct {
	contextID string
	state     string
	final     bool
	statusTS  int64 // status timestamp, unix ns; 0 when none
	jobID     string
	json      []byte
}

func rowOf(t *sdk.Task) (taskRow, error) {
	if t == nil {
		return taskRow{}, fmt.Errorf("a2a: task store: no task")
	}
	b, err := json.Marshal(t)
	if err != nil {
		return taskRow{}, fmt.Errorf("a2a: task store: encode task %s: %w", t.ID, err)
	}
	r := taskRow{contextID: t.ContextID, state: string(t.Status.State), final: t.Status.State.Terminal(), json: b}
	if ts := t.Status.Timestamp; ts != nil {
		r.statusTS = ts.UnixNano()
	}
	if id, ok := t.Metadata[jobIDKey].(string); ok && !t.Status.State.Terminal() {
		r.jobID = id
	}
	return r, nil
}

func decodeTask(b []byte) (*sdk.Task, error) {
	var t sdk.Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("a2a: task store: decode task: %w", err)
	}
	return &t, nil
}

// listPage checks a ListTasks request and returns its page size and
// cursor (updated, id: the page starts after it; updated < 0 when none).
func listPage(req *sdk.ListTasksRequest) (size int, updated int64, id string, err error) {
	size = req.PageSize
	switch {
	case size == 0:
		size = 50
	case size < 1 || size > 100:
		return 0, 0, "", fmt.Errorf("page size must be between 1 and 100 inclusive, got %d: %w", size, sdk.ErrInvalidRequest)
	}
	updated = -1
	if req.PageToken != "" {
		b, derr := base64.RawURLEncoding.DecodeString(req.PageToken)
		u, rest, ok := strings.Cut(string(b), ":")
		n, perr := strconv.ParseInt(u, 10, 64)
		if derr != nil || !ok || perr != nil || rest == "" {
			return 0, 0, "", fmt.Errorf("page token %q is not one this agent gave: %w", req.PageToken, sdk.ErrInvalidParams)
		}
		updated, id = n, rest
	}
	return size, updated, id, nil
}

func pageToken(updated int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(updated, 10) + ":" + id))
}

// keepRow applies a ListTasks request's filters to a task's indexed fields.
func keepRow(req *sdk.ListTasksRequest, contextID, state string, statusTS int64) bool {
	if req.ContextID != "" && contextID != req.ContextID {
		return false
	}
	if req.Status != sdk.TaskStateUnspecified && state != string(req.Status) {
		return false
	}
	if after := req.StatusTimestampAfter; after != nil && statusTS != 0 && statusTS < after.UnixNano() {
		return false
	}
	return true
}

// shapeListed trims a listed task as the request asks: history to
// HistoryLength (default 100), artifacts only with IncludeArtifacts.
func shapeListed(t *sdk.Task, req *sdk.ListTasksRequest) {
	n := 100
	if req.HistoryLength != nil {
		n = *req.HistoryLength
	}
	if n == 0 {
		t.History = []*sdk.Message{}
	} else if n > 0 && len(t.History) > n {
		t.History = t.History[len(t.History)-n:]
	}
	if !req.IncludeArtifacts {
		t.Artifacts = nil
	}
}

// JobTask is an unfinished task that follows a job (a call that was
// queued): the [Server] resumes following it when it starts.
type JobTask struct {
	TaskID sdk.TaskID
	JobID  string
	Tenant string
}

// jobTaskLister is the optional ability of a store to list its unfinished
// job-backed tasks (the SQLite and Redis stores have it).
type jobTaskLister interface {
	JobTasks(ctx context.Context) ([]JobTask, error)
}

// checkPushConfig is the SDK's own check of a config to save.
func checkPushConfig(c *sdk.PushConfig) error {
	if c == nil {
		return fmt.Errorf("%w: push config cannot be nil", sdk.ErrInvalidParams)
	}
	if c.URL == "" {
		return fmt.Errorf("%w: push config endpoint cannot be empty", sdk.ErrInvalidParams)
	}
	if _, err := url.ParseRequestURI(c.URL); err != nil {
		return fmt.Errorf("%w: invalid push config endpoint URL: %w", sdk.ErrInvalidParams, err)
	}
	return nil
}

// pushConfigToSave copies c for task with an id (a new random one when c
// has none).
func pushConfigToSave(task sdk.TaskID, c *sdk.PushConfig) (*sdk.PushConfig, []byte, error) {
	if err := checkPushConfig(c); err != nil {
		return nil, nil, err
	}
	cp := *c
	if cp.ID == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		cp.ID = hex.EncodeToString(b[:])
	}
	cp.TaskID = task
	b, err := json.Marshal(&cp)
	if err != nil {
		return nil, nil, fmt.Errorf("a2a: push config store: encode: %w", err)
	}
	return &cp, b, nil
}

func decodePushConfig(b []byte) (*sdk.PushConfig, error) {
	var c sdk.PushConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("a2a: push config store: decode: %w", err)
	}
	return &c, nil
}

var (
	_ TaskStore       = (*SQLiteTaskStore)(nil)
	_ TaskStore       = (*RedisTaskStore)(nil)
	_ PushConfigStore = (*sqlitePushStore)(nil)
	_ PushConfigStore = (*redisPushStore)(nil)
	_ jobTaskLister   = (*SQLiteTaskStore)(nil)
	_ jobTaskLister   = (*RedisTaskStore)(nil)
)

// errTaskNotFound keeps the SDK's sentinel and names the task.
func errTaskNotFound(id sdk.TaskID) error {
	return fmt.Errorf("task %s: %w", id, sdk.ErrTaskNotFound)
}
