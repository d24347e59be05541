// Package taskrow is what toolhub's durable A2A task stores
// (a2a/sqlitetasks, a2a/redistasks) share: the owner of a task carried in
// the context, the fields a store indexes of a task ([Row]), ListTasks
// paging and filters, and push-config encoding. Package a2a uses it to put
// the owner in the context; the stores use it to read it.
package taskrow

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

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// The owner of a task is the tenant toolhub's a2a.Server puts in the
// context of every store call; a store used alone files every task under
// "". ListTasks lists the caller's tasks only; Get and Update do not check
// the owner (the Server does, through the task's metadata).
type tenantKey struct{}

// WithTenant returns ctx carrying the owner of the tasks stored through it.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// Tenant is the owner WithTenant put in ctx ("" when none).
func Tenant(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// TenantIn reports the owner WithTenant put in ctx, if it did.
func TenantIn(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok
}

// JobIDKey is the task metadata key naming the job a queued call became.
const JobIDKey = "toolhub/job_id"

// Row is what a store indexes of a task besides its JSON.
type Row struct {
	ContextID string
	State     string
	Final     bool
	StatusTS  int64 // status timestamp, unix ns; 0 when none
	JobID     string
	JSON      []byte
}

// RowOf returns what a store keeps of t.
func RowOf(t *sdk.Task) (Row, error) {
	if t == nil {
		return Row{}, fmt.Errorf("a2a: task store: no task")
	}
	b, err := json.Marshal(t)
	if err != nil {
		return Row{}, fmt.Errorf("a2a: task store: encode task %s: %w", t.ID, err)
	}
	r := Row{ContextID: t.ContextID, State: string(t.Status.State), Final: t.Status.State.Terminal(), JSON: b}
	if ts := t.Status.Timestamp; ts != nil {
		r.StatusTS = ts.UnixNano()
	}
	if id, ok := t.Metadata[JobIDKey].(string); ok && !t.Status.State.Terminal() {
		r.JobID = id
	}
	return r, nil
}

// DecodeTask decodes a task a store kept as [Row.JSON].
func DecodeTask(b []byte) (*sdk.Task, error) {
	var t sdk.Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("a2a: task store: decode task: %w", err)
	}
	return &t, nil
}

// Stored is the stored task a store kept as [Row.JSON] b at version v.
func Stored(b []byte, v int64) (*taskstore.StoredTask, error) {
	t, err := DecodeTask(b)
	if err != nil {
		return nil, err
	}
	return &taskstore.StoredTask{Task: t, Version: taskstore.TaskVersion(v)}, nil
}

// ListPage checks a ListTasks request and returns its page size and
// cursor (updated, id: the page starts after it; updated < 0 when none).
func ListPage(req *sdk.ListTasksRequest) (size int, updated int64, id string, err error) {
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

// PageToken is the cursor of the page that starts after (updated, id).
func PageToken(updated int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(updated, 10) + ":" + id))
}

// Keep applies a ListTasks request's filters to a task's indexed fields.
func Keep(req *sdk.ListTasksRequest, contextID, state string, statusTS int64) bool {
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

// Shape trims a listed task as the request asks: history to
// HistoryLength (default 100), artifacts only with IncludeArtifacts.
func Shape(t *sdk.Task, req *sdk.ListTasksRequest) {
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

// CheckPushConfig is the SDK's own check of a config to save.
func CheckPushConfig(c *sdk.PushConfig) error {
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

// PushConfigToSave copies c for task with an id (a new random one when c
// has none).
func PushConfigToSave(task sdk.TaskID, c *sdk.PushConfig) (*sdk.PushConfig, []byte, error) {
	if err := CheckPushConfig(c); err != nil {
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

// DecodePushConfig decodes a push config PushConfigToSave encoded.
func DecodePushConfig(b []byte) (*sdk.PushConfig, error) {
	var c sdk.PushConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("a2a: push config store: decode: %w", err)
	}
	return &c, nil
}

// NotFound keeps the SDK's sentinel and names the task.
func NotFound(id sdk.TaskID) error {
	return fmt.Errorf("task %s: %w", id, sdk.ErrTaskNotFound)
}
