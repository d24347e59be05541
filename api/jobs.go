package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/jobs"
)

// JobRoutesOptions configure [JobRoutes]. A nil *JobRoutesOptions, and
// every zero field, means the default.
type JobRoutesOptions struct {
	// Heartbeat is the interval of WebSocket pings on /v1/events; zero
	// means 25 s. A client that answers no ping for three intervals is
	// dropped.
	Heartbeat time.Duration
	// Poll is how often /v1/events looks for events made by other
	// instances (local ones arrive at once); zero means 1 s.
	Poll time.Duration
	// CheckOrigin for the WebSocket upgrade; nil means gorilla's default
	// (the Origin header, if any, must match the Host).
	CheckOrigin func(r *http.Request) bool
	// Done, when closed, ends every event stream with a "going away"
	// close frame (http.Server.Shutdown does not wait for or close
	// WebSockets); nil means streams end only when their clients go.
	Done <-chan struct{}
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Reauthenticate checks again that an open stream's request still
	// holds: its key not revoked nor expired. It is asked every Recheck
	// and before each event; an error ends the stream with close code
	// 1008 (policy violation). Nil means a stream is never checked again.
	Reauthenticate func(r *http.Request) error
	// Recheck is how often an open event stream is checked with
	// Reauthenticate; zero means 5 s.
	Recheck time.Duration
}

// JobRoutes returns the job routes, to mount with [Options.Routes]:
//
// The first three need a principal with a tenant (as tool calls do); the
// admin ones an operator key.
//
//	GET  /v1/jobs/{id}                  a job of the caller's tenant (404 for other tenants' jobs)
//	POST /v1/jobs/{id}/cancel           cancel a queued job of the caller's tenant
//	GET  /v1/events                     WebSocket: the tenant's job events as JSON text
//	                                    messages; resume with ?last_event_id= (or a
//	                                    Last-Event-ID header); pings every Heartbeat
//	POST /v1/admin/jobs/{id}/approve    operator: run a needs_review job
//	POST /v1/admin/jobs/{id}/reject     operator: reject it; body {"reason": "…"} optional
func JobRoutes(q *jobs.Queue, opts *JobRoutesOptions) func(mux *http.ServeMux) {
	h := &jobRoutes{q: q}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.Heartbeat <= 0 {
		h.opts.Heartbeat = 25 * time.Second
	}
	if h.opts.Poll <= 0 {
		h.opts.Poll = time.Second
	}
	if h.opts.Logger == nil {
		h.opts.Logger = slog.Default()
	}
	if h.opts.Recheck <= 0 {
		h.opts.Recheck = 5 * time.Second
	}
	h.up = websocket.Upgrader{CheckOrigin: h.opts.CheckOrigin}
	return func(mux *http.ServeMux) {
		mux.Handle("GET /v1/jobs/{id}", callers(http.HandlerFunc(h.get)))
		mux.Handle("POST /v1/jobs/{id}/cancel", callers(http.HandlerFunc(h.cancel)))
		mux.Handle("GET /v1/events", callers(http.HandlerFunc(h.events)))
		mux.Handle("POST /v1/admin/jobs/{id}/approve", Require(http.HandlerFunc(h.approve), auth.RoleOperator))
		mux.Handle("POST /v1/admin/jobs/{id}/reject", Require(http.HandlerFunc(h.reject), auth.RoleOperator))
	}
}

// errRevoked ends an event stream whose key no longer holds.
var errRevoked = errors.New("api: the stream's key was revoked or expired")

type jobRoutes struct {
	q    *jobs.Queue
	opts JobRoutesOptions
	up   websocket.Upgrader
}

// jobError answers a queue error: a missing job is not_found, a job in
// the wrong status conflict; anything else is the store's and answers
// internal.
func jobError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		err = &hub.Error{Code: hub.CodeNotFound, Message: err.Error(), Err: err}
	case errors.Is(err, jobs.ErrConflict):
		err = &hub.Error{Code: hub.CodeConflict, Message: err.Error(), Err: err}
	}
	writeError(w, r, err, "")
}

// tenantJob returns the job if it belongs to the request's tenant; another
// tenant's job is answered as missing, so ids cannot be probed.
func (h *jobRoutes) tenantJob(w http.ResponseWriter, r *http.Request) *jobs.Job {
	id := r.PathValue("id")
	j, err := h.q.Get(r.Context(), id)
	if err == nil && j.Tenant != TenantFrom(r.Context()) {
		err = &notFound{id}
	}
	if err != nil {
		jobError(w, r, err)
		return nil
	}
	return j
}

type notFound struct{ id string }

func (e *notFound) Error() string { return "jobs: no such job: " + e.id }
func (e *notFound) Unwrap() error { return jobs.ErrNotFound }

func (h *jobRoutes) get(w http.ResponseWriter, r *http.Request) {
	if j := h.tenantJob(w, r); j != nil {
		writeJSON(w, http.StatusOK, j)
	}
}

func (h *jobRoutes) cancel(w http.ResponseWriter, r *http.Request) {
	j := h.tenantJob(w, r)
	if j == nil {
		return
	}
	j, err := h.q.Cancel(r.Context(), j.ID, "canceled by the caller")
	if err != nil {
		jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

func (h *jobRoutes) approve(w http.ResponseWriter, r *http.Request) {
	j, err := h.q.Approve(r.Context(), r.PathValue("id"))
	if err != nil {
		jobError(w, r, err)
		return
	}
	h.opts.Logger.Info("jobs: approved by operator", "job", j.ID, "tenant", j.Tenant, "tool", j.Tool, "key", PrincipalFrom(r.Context()).KeyID)
	writeJSON(w, http.StatusOK, j)
}

func (h *jobRoutes) reject(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Reason string `json:"reason"`
	}
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10)); len(b) > 0 {
		if err := json.Unmarshal(b, &body); err != nil {
			writeError(w, r, hub.Errorf(hub.CodeInvalidRequest, "reject body: want {\"reason\": \"…\"}: %w", err), "")
			return
		}
	}
	j, err := h.q.Reject(r.Context(), r.PathValue("id"), body.Reason)
	if err != nil {
		jobError(w, r, err)
		return
	}
	h.opts.Logger.Info("jobs: rejected by operator", "job", j.ID, "tenant", j.Tenant, "tool", j.Tool, "reason", j.LastError, "key", PrincipalFrom(r.Context()).KeyID)
	writeJSON(w, http.StatusOK, j)
}

// events streams the tenant's job events over a WebSocket.
func (h *jobRoutes) events(w http.ResponseWriter, r *http.Request) {
	tenant := TenantFrom(r.Context())
	after, err := lastEventID(r)
	if err != nil {
		writeError(w, r, err, "")
		return
	}
	conn, err := h.up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if h.opts.Done != nil {
		go func() {
			select {
			case <-h.opts.Done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	keepAlive(ctx, cancel, conn, h.opts.Heartbeat)
	var revoked atomic.Bool // the request's key no longer holds
	if h.opts.Reauthenticate != nil {
		go h.recheckKey(ctx, cancel, r, &revoked)
	}
	err = h.q.Follow(ctx, tenant, after, h.opts.Poll, func(e jobs.Event) error {
		if h.opts.Reauthenticate != nil && h.opts.Reauthenticate(r) != nil {
			revoked.Store(true)
			return errRevoked
		}
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		return conn.WriteJSON(e)
	})
	h.closeEvents(ctx, conn, r, tenant, revoked.Load(), err)
}

// lastEventID is the id of the last event the client received
// (last_event_id, or the Last-Event-ID header): the stream resumes after
// it; 0 without.
func lastEventID(r *http.Request) (int64, error) {
	last := r.URL.Query().Get("last_event_id")
	if last == "" {
		last = r.Header.Get("Last-Event-ID")
	}
	if last == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(last, 10, 64)
	if err != nil || n < 0 {
		return 0, hub.Errorf(hub.CodeInvalidRequest, "last_event_id %q: want the id of the last event received", last)
	}
	return n, nil
}

// keepAlive reads the connection (pongs, close) and pings it every hb
// until the client goes or ctx ends; a client silent for 3 heartbeats, or
// a ping that cannot be sent, cancels the stream.
func keepAlive(ctx context.Context, cancel context.CancelFunc, conn *websocket.Conn, hb time.Duration) {
	conn.SetReadLimit(4 << 10)
	_ = conn.SetReadDeadline(time.Now().Add(3 * hb))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(3 * hb)) })
	go func() { // reads (pongs, close) until the client goes
		defer cancel()
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	go cancelWhen(ctx, cancel, hb, func() bool { // heartbeats
		return conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(10*time.Second)) != nil
	})
}

// cancelWhen asks failed every d until ctx ends; the first failure
// cancels the stream.
func cancelWhen(ctx context.Context, cancel context.CancelFunc, d time.Duration, failed func() bool) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if failed() {
				cancel()
				return
			}
		}
	}
}

// recheckKey checks the request's key every Recheck until ctx ends: a key
// that no longer holds marks the stream revoked and cancels it.
func (h *jobRoutes) recheckKey(ctx context.Context, cancel context.CancelFunc, r *http.Request, revoked *atomic.Bool) {
	cancelWhen(ctx, cancel, h.opts.Recheck, func() bool {
		if h.opts.Reauthenticate(r) != nil {
			revoked.Store(true)
			return true
		}
		return false
	})
}

// closeEvents closes the stream with the reason it ended: its key revoked,
// the server shutting down, or the event stream failing (err, unless the
// client went).
func (h *jobRoutes) closeEvents(ctx context.Context, conn *websocket.Conn, r *http.Request, tenant string, revoked bool, err error) {
	if revoked {
		h.opts.Logger.Info("jobs: event stream ended: its key was revoked or expired", "tenant", tenant, "key", PrincipalFrom(r.Context()).KeyID)
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "the key of this stream was revoked or expired"), time.Now().Add(time.Second))
		return
	}
	select {
	case <-h.opts.Done: // nil: never
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
		return
	default:
	}
	if err != nil && ctx.Err() == nil {
		h.opts.Logger.Warn("jobs: event stream ended", "tenant", tenant, "err", err)
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "event stream failed"), time.Now().Add(time.Second))
	}
}
