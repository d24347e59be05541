// Package sqlitetasks is the embedded store of toolhub's A2A tasks and
// their push configs ([a2a.TaskStore], [a2a.PushConfigStore]): tables in
// the job database (hub/jobs/sqlitejobs), through its connection.
//
//	js, _ := sqlitejobs.Open(ctx, filepath.Join(data, "jobs.db"), nil)
//	tasks, _ := sqlitetasks.New(ctx, js.DB(), nil)
//	srv := a2a.NewServer(gw, cat, &a2a.ServerOptions{TaskStore: tasks, PushConfigStore: tasks.PushConfigs()})
package sqlitetasks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/toolhub/toolhub/a2a"
	"github.com/toolhub/toolhub/a2a/internal/taskrow"

	_ "modernc.org/sqlite" // pure-Go SQLite driver
)

// Store is the embedded [a2a.TaskStore]: tables a2a_tasks and
// a2a_push_configs in one SQLite file (toolhub puts them in the job
// database, next to the jobs). A task is its JSON plus the columns that
// ListTasks filters and orders on; Update is a compare-and-set on the
// version. [Store.PushConfigs] keeps push-notification configs
// in the same file. Tasks finished more than KeepFinished ago are deleted
// (checked at most once a minute, when a task is created).
type Store struct {
	db   *sql.DB
	now  func() time.Time
	keep time.Duration

	mu         sync.Mutex
	lastPurged time.Time
}

const sqliteTaskSchema = `
CREATE TABLE IF NOT EXISTS a2a_tasks (
	id         TEXT PRIMARY KEY,
	owner      TEXT NOT NULL,
	context_id TEXT NOT NULL DEFAULT '',
	state      TEXT NOT NULL DEFAULT '',
	status_ts  INTEGER NOT NULL DEFAULT 0,
	updated    INTEGER NOT NULL,
	version    INTEGER NOT NULL,
	job_id     TEXT NOT NULL DEFAULT '',
	final      INTEGER NOT NULL DEFAULT 0,
	task       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_tasks_owner ON a2a_tasks (owner, updated DESC, id DESC);
CREATE INDEX IF NOT EXISTS a2a_tasks_job ON a2a_tasks (job_id) WHERE job_id != '';
CREATE INDEX IF NOT EXISTS a2a_tasks_final ON a2a_tasks (updated) WHERE final = 1;
CREATE TABLE IF NOT EXISTS a2a_push_configs (
	task_id TEXT NOT NULL,
	id      TEXT NOT NULL,
	config  TEXT NOT NULL,
	PRIMARY KEY (task_id, id)
);
`

// New keeps tasks in db, the job database's handle
// (sqlitejobs.Store.DB): tasks are stored where the jobs are, through the
// same connection. It creates its tables if needed; db stays its owner's
// to close.
func New(ctx context.Context, db *sql.DB, opts *a2a.TaskStoreOptions) (*Store, error) {
	if _, err := db.ExecContext(ctx, sqliteTaskSchema); err != nil {
		return nil, fmt.Errorf("a2a: task store: sqlite schema: %w", err)
	}
	return &Store{db: db, now: opts.Clock(), keep: opts.Keep()}, nil
}

// Close does nothing: the database belongs to the job store.
func (s *Store) Close() error { return nil }

func (s *Store) Create(ctx context.Context, t *sdk.Task) (taskstore.TaskVersion, error) {
	r, err := taskrow.RowOf(t)
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	s.purge(ctx)
	res, err := s.db.ExecContext(ctx, `INSERT INTO a2a_tasks (id, owner, context_id, state, status_ts, updated, version, job_id, final, task)
		VALUES (?,?,?,?,?,?,1,?,?,?) ON CONFLICT (id) DO NOTHING`,
		string(t.ID), taskrow.Tenant(ctx), r.ContextID, r.State, r.StatusTS, s.now().UnixNano(), r.JobID, r.Final, string(r.JSON))
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("a2a: task store: create %s: %w", t.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return taskstore.TaskVersionMissing, taskstore.ErrTaskAlreadyExists
	}
	return 1, nil
}

func (s *Store) Update(ctx context.Context, u *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	r, err := taskrow.RowOf(u.Task)
	if err != nil {
		return taskstore.TaskVersionMissing, err
	}
	var v int64
	err = s.db.QueryRowContext(ctx, `UPDATE a2a_tasks SET context_id = ?, state = ?, status_ts = ?, updated = ?, version = version + 1, job_id = ?, final = ?, task = ?
		WHERE id = ? AND (? = 0 OR version = ?) RETURNING version`,
		r.ContextID, r.State, r.StatusTS, s.now().UnixNano(), r.JobID, r.Final, string(r.JSON),
		string(u.Task.ID), int64(u.PrevVersion), int64(u.PrevVersion)).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		var one int
		if err := s.db.QueryRowContext(ctx, `SELECT 1 FROM a2a_tasks WHERE id = ?`, string(u.Task.ID)).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return taskstore.TaskVersionMissing, taskrow.NotFound(u.Task.ID)
		}
		return taskstore.TaskVersionMissing, taskstore.ErrConcurrentModification
	}
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("a2a: task store: update %s: %w", u.Task.ID, err)
	}
	return taskstore.TaskVersion(v), nil
}

func (s *Store) Get(ctx context.Context, id sdk.TaskID) (*taskstore.StoredTask, error) {
	var b string
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT task, version FROM a2a_tasks WHERE id = ?`, string(id)).Scan(&b, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, taskrow.NotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("a2a: task store: get %s: %w", id, err)
	}
	return taskrow.Stored([]byte(b), v)
}

// List lists the caller's tasks, most recently updated first.
func (s *Store) List(ctx context.Context, req *sdk.ListTasksRequest) (*sdk.ListTasksResponse, error) {
	size, cu, cid, err := taskrow.ListPage(req)
	if err != nil {
		return nil, err
	}
	where := `owner = ?`
	args := []any{taskrow.Tenant(ctx)}
	if req.ContextID != "" {
		where += ` AND context_id = ?`
		args = append(args, req.ContextID)
	}
	if req.Status != sdk.TaskStateUnspecified {
		where += ` AND state = ?`
		args = append(args, string(req.Status))
	}
	if after := req.StatusTimestampAfter; after != nil {
		where += ` AND (status_ts = 0 OR status_ts >= ?)`
		args = append(args, after.UnixNano())
	}
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM a2a_tasks WHERE `+where, args...).Scan(&total); err != nil {
		return nil, fmt.Errorf("a2a: task store: list: %w", err)
	}
	if cu >= 0 {
		where += ` AND (updated < ? OR (updated = ? AND id < ?))`
		args = append(args, cu, cu, cid)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, updated, task FROM a2a_tasks WHERE `+where+` ORDER BY updated DESC, id DESC LIMIT ?`, append(args, size+1)...)
	if err != nil {
		return nil, fmt.Errorf("a2a: task store: list: %w", err)
	}
	defer rows.Close()
	resp := &sdk.ListTasksResponse{Tasks: []*sdk.Task{}, TotalSize: total, PageSize: size}
	var lastUpdated int64
	var lastID string
	for rows.Next() {
		var id, b string
		var updated int64
		if err := rows.Scan(&id, &updated, &b); err != nil {
			return nil, fmt.Errorf("a2a: task store: list: %w", err)
		}
		if len(resp.Tasks) == size {
			resp.NextPageToken = taskrow.PageToken(lastUpdated, lastID)
			break
		}
		t, err := taskrow.DecodeTask([]byte(b))
		if err != nil {
			return nil, err
		}
		taskrow.Shape(t, req)
		resp.Tasks = append(resp.Tasks, t)
		lastUpdated, lastID = updated, id
	}
	return resp, rows.Err()
}

// purge deletes the tasks (and their push configs) that ended more than
// KeepFinished ago, at most once a minute; a failure waits for the next.
func (s *Store) purge(ctx context.Context) {
	if s.keep <= 0 {
		return
	}
	now := s.now()
	s.mu.Lock()
	due := now.Sub(s.lastPurged) >= time.Minute
	if due {
		s.lastPurged = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	before := now.Add(-s.keep).UnixNano()
	_, _ = s.db.ExecContext(ctx, `DELETE FROM a2a_push_configs WHERE task_id IN (SELECT id FROM a2a_tasks WHERE final = 1 AND updated < ?)`, before)
	_, _ = s.db.ExecContext(ctx, `DELETE FROM a2a_tasks WHERE final = 1 AND updated < ?`, before)
}

// JobTasks lists the unfinished tasks that follow a job.
func (s *Store) JobTasks(ctx context.Context) ([]a2a.JobTask, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, job_id, owner FROM a2a_tasks WHERE job_id != '' ORDER BY updated`)
	if err != nil {
		return nil, fmt.Errorf("a2a: task store: job tasks: %w", err)
	}
	defer rows.Close()
	var out []a2a.JobTask
	for rows.Next() {
		var jt a2a.JobTask
		var id string
		if err := rows.Scan(&id, &jt.JobID, &jt.Tenant); err != nil {
			return nil, fmt.Errorf("a2a: task store: job tasks: %w", err)
		}
		jt.TaskID = sdk.TaskID(id)
		out = append(out, jt)
	}
	return out, rows.Err()
}

// PushConfigs returns the push-notification config store in the same
// database.
func (s *Store) PushConfigs() a2a.PushConfigStore { return &pushStore{db: s.db} }

type pushStore struct{ db *sql.DB }

func (p *pushStore) Save(ctx context.Context, task sdk.TaskID, c *sdk.PushConfig) (*sdk.PushConfig, error) {
	cp, b, err := taskrow.PushConfigToSave(task, c)
	if err != nil {
		return nil, err
	}
	if _, err := p.db.ExecContext(ctx, `INSERT INTO a2a_push_configs (task_id, id, config) VALUES (?,?,?)
		ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config`, string(task), cp.ID, string(b)); err != nil {
		return nil, fmt.Errorf("a2a: push config store: save: %w", err)
	}
	return cp, nil
}

func (p *pushStore) Get(ctx context.Context, task sdk.TaskID, id string) (*sdk.PushConfig, error) {
	var b string
	err := p.db.QueryRowContext(ctx, `SELECT config FROM a2a_push_configs WHERE task_id = ? AND id = ?`, string(task), id).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, push.ErrPushConfigNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("a2a: push config store: get: %w", err)
	}
	return taskrow.DecodePushConfig([]byte(b))
}

func (p *pushStore) List(ctx context.Context, task sdk.TaskID) ([]*sdk.PushConfig, error) {
	rows, err := p.db.QueryContext(ctx, `SELECT config FROM a2a_push_configs WHERE task_id = ? ORDER BY id`, string(task))
	if err != nil {
		return nil, fmt.Errorf("a2a: push config store: list: %w", err)
	}
	defer rows.Close()
	out := []*sdk.PushConfig{}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("a2a: push config store: list: %w", err)
		}
		c, err := taskrow.DecodePushConfig([]byte(b))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (p *pushStore) Delete(ctx context.Context, task sdk.TaskID, id string) error {
	if _, err := p.db.ExecContext(ctx, `DELETE FROM a2a_push_configs WHERE task_id = ? AND id = ?`, string(task), id); err != nil {
		return fmt.Errorf("a2a: push config store: delete: %w", err)
	}
	return nil
}

func (p *pushStore) DeleteAll(ctx context.Context, task sdk.TaskID) error {
	if _, err := p.db.ExecContext(ctx, `DELETE FROM a2a_push_configs WHERE task_id = ?`, string(task)); err != nil {
		return fmt.Errorf("a2a: push config store: delete all: %w", err)
	}
	return nil
}

var (
	_ a2a.TaskStore       = (*Store)(nil)
	_ a2a.PushConfigStore = (*pushStore)(nil)
)
