package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
	"github.com/toolhub/toolhub/hub/jobs"
)

// A call the gateway answers "queued" (every vendor failed and the
// capability queues: hub.Provenance.Queued with a JobID) is a task that
// stays working and follows its job:
//
//	submitted → working (metadata toolhub/job_id) → completed (the job's result as the artifact)
//	                                               → failed (the job failed or was rejected)
//	                                               → canceled (CancelTask canceled the job, or an operator did)
//
// SendMessage answers at once with the working task; a stream stays open
// until the job ends. The job is followed through the queue's event feed
// (jobs.Queue.Follow: local changes at once, other instances' by polling),
// so a job finished by another instance completes the task too. Tasks are
// in the task store; [Server.Start] resumes following the unfinished ones
// after a restart.

// watch registers interest in a job: the returned channel gets a kick (it
// holds one at most) whenever an event of the job is seen. stop ends it.
func (s *Server) watch(jobID string) (<-chan struct{}, func()) {
	s.followOnce.Do(func() {
		// The feed's end is read before any watcher registers, and a
		// watcher reads its job after registering: an event is either
		// kicked to it or already reflected in what it reads.
		after, err := s.feedEnd()
		if err != nil {
			s.opts.Logger.Warn("a2a: reading the job event feed failed; following it from its start", "err", err)
		}
		s.goFollow(func() { s.followJobs(after) })
	})
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.watchers[jobID] = append(s.watchers[jobID], ch)
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		ws := s.watchers[jobID]
		for i, w := range ws {
			if w == ch {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(s.watchers, jobID)
		} else {
			s.watchers[jobID] = ws
		}
	}
}

// feedEnd is the id of the job feed's last event.
func (s *Server) feedEnd() (int64, error) {
	var after int64
	for {
		evs, err := s.opts.Jobs.Events(s.ctx, "", after, 1000)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return after, nil
		}
		after = evs[len(evs)-1].ID
	}
}

// followJobs follows the job event feed after the event id after until
// the server stops, kicking the watchers of each event's job.
func (s *Server) followJobs(after int64) {
	q := s.opts.Jobs
	for {
		err := q.Follow(s.ctx, "", after, s.opts.JobPoll, func(e jobs.Event) error {
			after = e.ID
			s.mu.Lock()
			for _, ch := range s.watchers[e.JobID] {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			s.mu.Unlock()
			return nil
		})
		if s.ctx.Err() != nil {
			return
		}
		s.opts.Logger.Warn("a2a: following the job event feed failed; retrying", "err", err)
		if !s.sleep(s.opts.JobPoll) {
			return
		}
	}
}

func (s *Server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// awaitJob waits for the job to reach a final status and returns it;
// progress, if set, is told of every other status seen. It ends early
// with ctx's error, or the server's when it stops.
func (s *Server) awaitJob(ctx context.Context, jobID string, progress func(*jobs.Job)) (*jobs.Job, error) {
	kick, stop := s.watch(jobID)
	defer stop()
	// A safety net besides the feed: a Get that failed for a moment.
	safety := time.NewTicker(max(10*s.opts.JobPoll, 5*time.Second))
	defer safety.Stop()
	var last jobs.Status
	for {
		j, err := s.opts.Jobs.Get(ctx, jobID)
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			return nil, err
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.opts.Logger.Warn("a2a: reading a job failed", "job", jobID, "err", err)
		case j.Status.Final():
			return j, nil
		case j.Status != last:
			last = j.Status
			if progress != nil {
				progress(j)
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		case <-kick:
		case <-safety.C:
		}
	}
}

// followJob runs the rest of a task whose call was queued: working with
// the job id, progress while the job waits and runs, then the job's
// outcome.
func (e *executor) followJob(ctx context.Context, ec *a2asrv.ExecutorContext, res *hub.Result, yield func(sdk.Event, error) bool) {
	s := e.s
	jobID := res.Provenance.JobID
	msg := sdk.NewMessageForTask(sdk.MessageRoleAgent, ec, partsFromResult(res)...)
	msg.Metadata = resultMetadata(res)
	msg.Metadata[jobIDKey] = jobID
	ev := sdk.NewStatusUpdateEvent(ec, sdk.TaskStateWorking, msg)
	ev.Metadata = map[string]any{jobIDKey: jobID}
	if !yield(ev, nil) {
		return
	}
	// Progress: each kind of status once (a job retried all night would
	// otherwise fill the task's history).
	stopped, told := false, map[string]bool{string(jobs.Queued): true}
	j, err := s.awaitJob(ctx, jobID, func(j *jobs.Job) {
		kind := string(j.Status)
		if j.Status == jobs.Queued && j.LastError != "" {
			kind += " retry"
		}
		if stopped || told[kind] {
			return
		}
		told[kind] = true
		if !yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateWorking, jobProgress(ec, j)), nil) {
			stopped = true
		}
	})
	s.mu.Lock()
	quit := stopped || ctx.Err() != nil || s.ctx.Err() != nil || s.canceling[jobID] > 0
	s.mu.Unlock()
	if quit {
		return // CancelTask canceled the job and reports the state, or the server stopped
	}
	for _, ev := range jobOutcome(ec, jobID, j, err) {
		if !yield(ev, nil) {
			return
		}
	}
}

func jobProgress(info sdk.TaskInfoProvider, j *jobs.Job) *sdk.Message {
	text := fmt.Sprintf("job %s is %s", j.ID, j.Status)
	switch {
	case j.Status == jobs.Running:
		text += fmt.Sprintf(" (attempt %d)", j.Attempts)
	case j.Status == jobs.Queued && j.LastError != "":
		text += " for a retry after: " + j.LastError
	case j.Status == jobs.NeedsReview:
		text += ": " + j.LastError
	}
	m := sdk.NewMessageForTask(sdk.MessageRoleAgent, info, sdk.NewTextPart(text))
	m.Metadata = map[string]any{jobIDKey: j.ID, "toolhub/job_status": string(j.Status)}
	return m
}

// jobOutcome is the events that end a task with its job's final status
// (j nil: the job could not be read, err says why).
func jobOutcome(info sdk.TaskInfoProvider, jobID string, j *jobs.Job, err error) []sdk.Event {
	failed := func(code hub.Code, text string) []sdk.Event {
		b := httperr.BodyOf(context.Background(), &hub.Error{Code: code, Message: text, Details: map[string]any{"job_id": jobID}}, "")
		m := sdk.NewMessageForTask(sdk.MessageRoleAgent, info, sdk.NewTextPart(b.Message))
		m.Metadata = map[string]any{"toolhub/error": errorJSON(b), jobIDKey: jobID}
		return []sdk.Event{sdk.NewStatusUpdateEvent(info, sdk.TaskStateFailed, m)}
	}
	if j == nil {
		return failed(hub.CodeInternal, fmt.Sprintf("job %s: %v", jobID, err))
	}
	switch j.Status {
	case jobs.Succeeded:
		res, derr := resultOfJob(j.Result)
		if derr != nil {
			return failed(hub.CodeInternal, fmt.Sprintf("job %s succeeded but its result does not decode: %v", jobID, derr))
		}
		art := sdk.NewArtifactEvent(info, partsFromResult(res)...)
		art.Artifact.Name = "result"
		art.Artifact.Metadata = resultMetadata(res)
		art.Artifact.Metadata[jobIDKey] = jobID
		state := sdk.TaskStateCompleted
		if res.IsError {
			art.Artifact.Metadata["toolhub/is_error"] = true
			state = sdk.TaskStateFailed
		}
		return []sdk.Event{art, sdk.NewStatusUpdateEvent(info, state, nil)}
	case jobs.Rejected:
		return failed(hub.CodeForbidden, fmt.Sprintf("job %s was rejected: %s", jobID, orText(j.LastError, "no reason given")))
	case jobs.Canceled:
		m := sdk.NewMessageForTask(sdk.MessageRoleAgent, info, sdk.NewTextPart(fmt.Sprintf("job %s was canceled: %s", jobID, orText(j.LastError, "no reason given"))))
		return []sdk.Event{sdk.NewStatusUpdateEvent(info, sdk.TaskStateCanceled, m)}
	default:
		return failed(hub.CodeUnavailable, fmt.Sprintf("job %s failed: %s", jobID, orText(j.LastError, "no reason given")))
	}
}

// resultOfJob decodes a job's stored result (jobs.ResultJSON).
func resultOfJob(raw json.RawMessage) (*hub.Result, error) {
	var rj jobs.ResultJSON
	if err := json.Unmarshal(raw, &rj); err != nil {
		return nil, err
	}
	r := &hub.Result{Structured: rj.Structured, IsError: rj.IsError, Findings: rj.Findings}
	if rj.Provenance != nil {
		r.Provenance = *rj.Provenance
	}
	if len(rj.Content) > 0 {
		var items []map[string]any
		if err := json.Unmarshal(rj.Content, &items); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
		for _, it := range items {
			c, err := mcp.ParseContent(it)
			if err != nil {
				return nil, fmt.Errorf("content: %w", err)
			}
			r.Content = append(r.Content, c)
		}
	}
	return r, nil
}

// cancelJob cancels a job-backed task's job for CancelTask, marking it
// as being canceled (the caller unmarks it once the task's execution is
// stopped), so that the task's own follower leaves reporting the state to
// CancelTask. A job that already runs (or ended) cannot be canceled: the
// task then keeps following it.
func (e *executor) cancelJob(ctx context.Context, jobID string) error {
	s := e.s
	s.mu.Lock()
	s.canceling[jobID]++
	s.mu.Unlock()
	_, err := s.opts.Jobs.Cancel(ctx, jobID, "canceled by the A2A client (CancelTask)")
	if err != nil && !errors.Is(err, jobs.ErrNotFound) {
		s.mu.Lock()
		s.unmarkCanceling(jobID)
		s.mu.Unlock()
	}
	switch {
	case err == nil, errors.Is(err, jobs.ErrNotFound):
		return nil
	case errors.Is(err, jobs.ErrConflict):
		st := "past canceling"
		if j, gerr := s.opts.Jobs.Get(ctx, jobID); gerr == nil {
			st = string(j.Status)
		}
		return sdk.NewError(sdk.ErrTaskNotCancelable, fmt.Sprintf("job %s is %s and can no longer be canceled; the task follows it", jobID, st))
	default:
		return fmt.Errorf("cancel job %s: %w", jobID, err)
	}
}

// unmarkCanceling ends a CancelTask's mark on a job; s.mu must be held.
func (s *Server) unmarkCanceling(jobID string) {
	if s.canceling[jobID]--; s.canceling[jobID] <= 0 {
		delete(s.canceling, jobID)
	}
}

// Start resumes following the unfinished tasks of queued calls that the
// task store holds (after a restart, or those of an instance that went
// away), when the server has [ServerOptions].Jobs and the store can list
// them (the SQLite and Redis stores can). Work stops when ctx ends, or at
// [Server.Close].
func (s *Server) Start(ctx context.Context) error {
	context.AfterFunc(ctx, s.cancel)
	if s.opts.Jobs == nil {
		return nil
	}
	l, ok := s.opts.TaskStore.(jobTaskLister)
	if !ok {
		return nil
	}
	list, err := l.JobTasks(ctx)
	if err != nil {
		return fmt.Errorf("a2a: resume tasks of queued calls: %w", err)
	}
	for _, jt := range list {
		s.goFollow(func() { s.resume(jt) })
	}
	if len(list) > 0 {
		s.opts.Logger.Info("a2a: following the jobs of unfinished tasks", "tasks", len(list))
	}
	return nil
}

// Close stops following jobs and waits for the followers to end.
func (s *Server) Close() error {
	s.cancel()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// goFollow runs f in a goroutine that Close waits for, unless Close has
// begun: a WaitGroup must not be added to while it is waited on.
func (s *Server) goFollow(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// resume follows one stored task's job and writes its outcome to the store
// directly (no execution runs it any more), sending push notifications.
// Another instance doing the same, or an execution finishing it, is fine:
// the version compare-and-set lets one outcome in.
func (s *Server) resume(jt JobTask) {
	ctx := withStoreTenant(s.ctx, jt.Tenant)
	j, err := s.awaitJob(ctx, jt.JobID, nil)
	if s.ctx.Err() != nil {
		return
	}
	for range 10 {
		st, gerr := s.store.Get(ctx, jt.TaskID)
		if gerr != nil {
			s.opts.Logger.Warn("a2a: resumed task is gone", "task", jt.TaskID, "err", gerr)
			return
		}
		if st.Task.Status.State.Terminal() {
			return
		}
		task := st.Task
		prev := *task
		evs := jobOutcome(task, jt.JobID, j, err)
		for _, ev := range evs {
			applyEvent(task, ev)
		}
		_, uerr := s.store.Update(ctx, &taskstore.UpdateRequest{Task: task, Event: evs[len(evs)-1], PrevTask: &prev, PrevVersion: st.Version})
		if errors.Is(uerr, taskstore.ErrConcurrentModification) {
			continue
		}
		if uerr != nil {
			s.opts.Logger.Error("a2a: writing the outcome of a resumed task failed", "task", jt.TaskID, "err", uerr)
			return
		}
		s.opts.Logger.Info("a2a: resumed task ended with its job", "task", jt.TaskID, "job", jt.JobID, "state", task.Status.State)
		s.pushAll(ctx, jt.TaskID, evs)
		return
	}
}

// applyEvent applies an artifact or status event to a task the way the
// SDK does.
func applyEvent(t *sdk.Task, ev sdk.Event) {
	switch e := ev.(type) {
	case *sdk.TaskArtifactUpdateEvent:
		t.Artifacts = append(t.Artifacts, e.Artifact)
	case *sdk.TaskStatusUpdateEvent:
		if t.Status.Message != nil {
			t.History = append(t.History, t.Status.Message)
		}
		t.Status = e.Status
		for k, v := range e.Metadata {
			t.SetMeta(k, v)
		}
	}
}

func (s *Server) pushAll(ctx context.Context, id sdk.TaskID, evs []sdk.Event) {
	if s.push == nil || s.sender == nil {
		return
	}
	cfgs, err := s.push.List(ctx, id)
	if err != nil {
		s.opts.Logger.Warn("a2a: push configs of a resumed task", "task", id, "err", err)
		return
	}
	for _, c := range cfgs {
		for _, ev := range evs {
			if err := s.sender.SendPush(ctx, c, ev); err != nil {
				s.opts.Logger.Warn("a2a: push notification failed", "task", id, "err", err)
				break
			}
		}
	}
}

// jobHandler answers SendMessage as soon as a task follows a job (the
// working task), instead of when the job ends; the task goes on in the
// background. SubscribeToTask also works for a task whose job another
// instance, or this one after a restart, follows. Everything else is the
// SDK handler's.
type jobHandler struct {
	a2asrv.RequestHandler
	s *Server
}

// SubscribeToTask is the SDK's, and for a job-backed task that no
// execution of this process runs (the SDK has nothing to subscribe to):
// the task now, then the task once it has ended.
func (h jobHandler) SubscribeToTask(ctx context.Context, req *sdk.SubscribeToTaskRequest) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		// The SDK attaches to a running execution by task id alone: only
		// the task's own tenant may (another tenant's task is not found,
		// as with GetTask and CancelTask).
		if req != nil {
			if _, err := h.s.store.Get(ctx, req.ID); err != nil {
				yield(nil, fmt.Errorf("%w: %s", sdk.ErrTaskNotFound, req.ID))
				return
			}
		}
		var refused error
		first := true
		for ev, err := range h.RequestHandler.SubscribeToTask(ctx, req) {
			if first && err != nil && req != nil && h.s.opts.Jobs != nil {
				refused = err
				break
			}
			first = false
			if !yield(ev, err) {
				return
			}
		}
		if refused == nil {
			return
		}
		task, err := h.RequestHandler.GetTask(ctx, &sdk.GetTaskRequest{ID: req.ID})
		if err != nil {
			yield(nil, refused)
			return
		}
		jobID, _ := task.Metadata[jobIDKey].(string)
		if jobID == "" || task.Status.State.Terminal() {
			yield(nil, refused)
			return
		}
		if !yield(task, nil) {
			return
		}
		if _, err := h.s.awaitJob(ctx, jobID, nil); err != nil && ctx.Err() != nil {
			return
		}
		// The outcome is written by whoever follows the job; wait for it.
		t := time.NewTicker(h.s.opts.JobPoll)
		defer t.Stop()
		for {
			task, err := h.RequestHandler.GetTask(ctx, &sdk.GetTaskRequest{ID: req.ID})
			if err != nil {
				yield(nil, err)
				return
			}
			if task.Status.State.Terminal() {
				yield(task, nil)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-h.s.ctx.Done():
				return
			case <-t.C:
			}
		}
	}
}

func (h jobHandler) SendMessage(ctx context.Context, req *sdk.SendMessageRequest) (sdk.SendMessageResult, error) {
	if req == nil || req.Config != nil && req.Config.ReturnImmediately {
		return h.RequestHandler.SendMessage(ctx, req)
	}
	var last sdk.Event
	for ev, err := range h.RequestHandler.SendStreamingMessage(ctx, req) {
		if err != nil {
			return nil, err
		}
		last = ev
		if su, ok := ev.(*sdk.TaskStatusUpdateEvent); ok && su.Status.State == sdk.TaskStateWorking && su.Metadata[jobIDKey] != nil {
			break
		}
	}
	switch v := last.(type) {
	case nil:
		return nil, fmt.Errorf("execution finished without producing any events: %w", sdk.ErrInvalidAgentResponse)
	case *sdk.Message:
		return v, nil
	}
	return h.RequestHandler.GetTask(ctx, &sdk.GetTaskRequest{ID: last.TaskInfo().TaskID})
}

// tenantPushStore keeps push configs to the tasks of the caller's tenant.
type tenantPushStore struct {
	inner PushConfigStore
	tasks *tenantStore
}

func (p *tenantPushStore) check(ctx context.Context, id sdk.TaskID) error {
	_, err := p.tasks.Get(ctx, id)
	return err
}

// Save also takes a config for a task that does not exist yet: a message
// that starts a task may carry one, saved before the task is.
func (p *tenantPushStore) Save(ctx context.Context, id sdk.TaskID, c *sdk.PushConfig) (*sdk.PushConfig, error) {
	st, err := p.tasks.inner.Get(withStoreTenant(ctx, p.tasks.tenant(ctx)), id)
	switch {
	case errors.Is(err, sdk.ErrTaskNotFound):
	case err != nil:
		return nil, err
	case !p.tasks.owns(ctx, st.Task):
		return nil, sdk.ErrTaskNotFound
	}
	return p.inner.Save(ctx, id, c)
}

func (p *tenantPushStore) Get(ctx context.Context, id sdk.TaskID, cid string) (*sdk.PushConfig, error) {
	if err := p.check(ctx, id); err != nil {
		return nil, err
	}
	return p.inner.Get(ctx, id, cid)
}

func (p *tenantPushStore) List(ctx context.Context, id sdk.TaskID) ([]*sdk.PushConfig, error) {
	if err := p.check(ctx, id); err != nil {
		return nil, err
	}
	return p.inner.List(ctx, id)
}

func (p *tenantPushStore) Delete(ctx context.Context, id sdk.TaskID, cid string) error {
	if err := p.check(ctx, id); err != nil {
		return err
	}
	return p.inner.Delete(ctx, id, cid)
}

func (p *tenantPushStore) DeleteAll(ctx context.Context, id sdk.TaskID) error {
	if err := p.check(ctx, id); err != nil {
		return err
	}
	return p.inner.DeleteAll(ctx, id)
}
