package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The notifications a vendor sends during a tool call (progress, log
// messages, cancellations of its requests) go to the client on the call's
// own answer, as server-sent events ahead of the result, in the order the
// vendor sent them.
//
// mcp-go's streamable HTTP server cannot be trusted with that: every POST
// of a session and its GET stream read one notification channel, so a
// call's notification can go out on another request's answer, and a POST
// whose request has ended takes one off it and drops it (on that queue
// most calls of TestProgressBeforeResult, four at a time on one session,
// lost a progress notification or got another call's). So toolhub queues
// them per call (noteQueue) and writes them itself: on the fast path's
// answer (fastOut), or on the answer of a POST mcp-go serves (callStream).
//
// The queue also keeps a slow client from stalling the vendor: the vendor
// connection's reader only appends to it; a writer goroutine per call
// waits for the client. A queue that holds maxQueuedNotes drops what comes
// next, as mcp-go drops a notification its full channel cannot take.

// maxQueuedNotes bounds the notifications of one call waiting for its
// client (mcp-go's notification channel holds as many).
const maxQueuedNotes = 100

// errNoteDropped is returned for a notification a call's queue could not
// take: it is full, or the call's answer is done.
var errNoteDropped = errors.New("toolhub: notification dropped: the client's stream is not reading or the call is over")

// noteQueue is the queue of one call's notifications. The zero value is
// not usable: write must be set.
type noteQueue struct {
	write func([]byte) // writes one note to the client; may block

	mu      sync.Mutex
	notes   [][]byte
	running bool          // a writer goroutine is draining notes
	closed  bool          // the call is over: push drops
	drained chan struct{} // closed by the writer when it stops, if set
}

// push queues a note; it never waits for the client.
func (q *noteQueue) push(b []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.notes) >= maxQueuedNotes {
		return errNoteDropped
	}
	q.notes = append(q.notes, b)
	if !q.running {
		q.running = true
		go q.drain()
	}
	return nil
}

func (q *noteQueue) drain() {
	for {
		q.mu.Lock()
		if len(q.notes) == 0 {
			q.running = false
			q.notes = nil
			if q.drained != nil {
				close(q.drained)
				q.drained = nil
			}
			q.mu.Unlock()
			return
		}
		b := q.notes[0]
		q.notes[0] = nil
		q.notes = q.notes[1:]
		q.mu.Unlock()
		q.write(b)
	}
}

// shut ends the queue without waiting: later notes are dropped.
func (q *noteQueue) shut() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// close ends the queue: later notes are dropped. It returns once the
// notes queued before are written, or when ctx ends (the client is gone or
// the call was cancelled; what is left is dropped by the writer).
func (q *noteQueue) close(ctx context.Context) {
	q.mu.Lock()
	q.closed = true
	if !q.running {
		q.mu.Unlock()
		return
	}
	if q.drained == nil {
		q.drained = make(chan struct{})
	}
	ch := q.drained
	q.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// notificationJSON is a notification as mcp-go writes it.
func notificationJSON(method string, params map[string]any) ([]byte, error) {
	return json.Marshal(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}})
}

// logFiltered reports a log message the client of sess did not ask for:
// under the session's level, or for no session (a 2026-07-28 request's
// stateless session has no level).
func logFiltered(sess server.ClientSession, method string, params map[string]any) bool {
	if method != string(mcp.MethodNotificationMessage) {
		return false
	}
	if sess == nil {
		return true
	}
	s, ok := sess.(server.SessionWithLogging)
	lvl, _ := params["level"].(string)
	return ok && !mcp.LoggingLevel(lvl).ShouldSendTo(s.GetLogLevel())
}

// startEventStream turns the answer w into a server-sent event stream,
// with the headers mcp-go sends.
func startEventStream(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// writeEvent writes b on w as one server-sent event, as mcp-go writes
// them, and flushes it.
func writeEvent(w http.ResponseWriter, b []byte) {
	buf := getBuf()
	defer putBuf(buf)
	*buf = append(*buf, "event: message\ndata: "...)
	*buf = append(*buf, b...)
	*buf = append(*buf, "\n\n"...)
	_, _ = w.Write(*buf)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// callStream is the answer of a POST holding a tools/call that mcp-go
// serves, with the call's notifications (mcpPeer.Notify) written on it.
// mcp-go does not know of them: its headers go to a shadow set until it
// writes them, and when a notification has already turned the answer
// into an event stream, mcp-go's application/json answer is held and
// written as the stream's last event once mcp-go is done (finish).
type callStream struct {
	w   http.ResponseWriter
	hdr http.Header // mcp-go's view of the headers
	q   noteQueue

	mu      sync.Mutex
	ours    bool // a notification upgraded the answer to an event stream
	theirs  bool // mcp-go's status line went out, as mcp-go wrote it
	passSSE bool // mcp-go answers with an event stream: its writes pass
	hold    bool // mcp-go's JSON answer is held until finish
	held    []byte
	done    bool // finished: nothing more is written
}

type callStreamKey struct{}

// newCallStream wraps the answer of r, a POST holding a tools/call, and
// returns r with the stream in its context (callStreamFrom).
func newCallStream(w http.ResponseWriter, r *http.Request) (*callStream, *http.Request) {
	cs := &callStream{w: w, hdr: w.Header().Clone()}
	cs.q.write = cs.note
	return cs, r.WithContext(context.WithValue(r.Context(), callStreamKey{}, cs))
}

// callStreamFrom returns the call stream of a request mcp-go serves, or nil.
func callStreamFrom(ctx context.Context) *callStream {
	cs, _ := ctx.Value(callStreamKey{}).(*callStream)
	return cs
}

func (cs *callStream) Header() http.Header { return cs.hdr }

func (cs *callStream) WriteHeader(status int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.writeHeaderLocked(status)
}

func (cs *callStream) writeHeaderLocked(status int) {
	if cs.theirs || cs.hold || cs.done {
		return
	}
	sse := strings.HasPrefix(cs.hdr.Get("Content-Type"), "text/event-stream")
	if cs.ours {
		// The stream is open: mcp-go's events join it, its JSON answer
		// waits for finish.
		cs.passSSE, cs.hold = sse, !sse
		cs.theirs = sse
		return
	}
	h := cs.w.Header()
	for k, v := range cs.hdr {
		h[k] = v
	}
	cs.w.WriteHeader(status)
	cs.theirs, cs.passSSE = true, sse
}

func (cs *callStream) Write(b []byte) (int, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.done {
		return 0, http.ErrHandlerTimeout
	}
	if !cs.theirs && !cs.hold {
		cs.writeHeaderLocked(http.StatusOK)
	}
	if cs.hold {
		cs.held = append(cs.held, b...)
		return len(b), nil
	}
	return cs.w.Write(b)
}

func (cs *callStream) Flush() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.hold || cs.done || !cs.theirs && !cs.ours {
		return
	}
	if fl, ok := cs.w.(http.Flusher); ok {
		fl.Flush()
	}
}

func (cs *callStream) Unwrap() http.ResponseWriter { return cs.w }

// note writes one notification of the call: an event on the stream,
// upgrading the answer to one first. A note after mcp-go began a JSON
// answer, or after finish, is dropped.
func (cs *callStream) note(b []byte) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if _, ok := cs.w.(http.Flusher); cs.done || !ok || cs.theirs && !cs.passSSE {
		return
	}
	if !cs.ours && !cs.theirs {
		startEventStream(cs.w)
		cs.ours = true
	}
	writeEvent(cs.w, b)
}

// finish runs once mcp-go is done with the request: a held answer goes
// out as the stream's last event, and nothing is written after.
func (cs *callStream) finish() {
	cs.q.shut() // notes still queued are dropped (the writer sees done)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.done {
		return
	}
	cs.done = true
	if len(cs.held) > 0 {
		writeEvent(cs.w, bytes.TrimRight(cs.held, "\n"))
	}
}

// upgradeSession does for a notification toolhub writes what mcp-go
// does for one it sends: later answers of the session are event streams.
func upgradeSession(ctx context.Context) {
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithStreamableHTTPConfig); ok {
		s.UpgradeToSSEWhenReceiveNotification()
	}
}
