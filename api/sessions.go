package api

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
)

// MCP sessions of the front door. A client on a protocol revision before
// 2026-07-28 gets a session from initialize (its Mcp-Session-Id); mcp-go
// keeps it until the client ends it with DELETE. Issue 32: 40,000
// initialize requests with one key took the hub from 79 to 835 MB, and
// the memory stayed. The session table caps sessions per key and in all,
// and ends sessions idle longer than the idle timeout as a DELETE would.

// Defaults of [SessionOptions].
const (
	DefaultMaxSessionsPerKey  = 1000
	DefaultMaxSessions        = 10000
	DefaultSessionIdleTimeout = 10 * time.Minute
)

// SessionOptions bound the MCP sessions of the front door. Zero fields
// mean the defaults.
type SessionOptions struct {
	// MaxPerKey bounds the open sessions of one key (one tenant, vendor or
	// operator key; with authentication off, every caller is one key);
	// zero means DefaultMaxSessionsPerKey. One more initialize is answered
	// 429 rate_limited.
	MaxPerKey int
	// MaxTotal bounds the open sessions of the hub; zero means
	// DefaultMaxSessions. One more initialize is answered 503 overloaded.
	MaxTotal int
	// IdleTimeout ends a session no request used for that long (a session
	// with a request or a GET stream open is not idle); zero means
	// DefaultSessionIdleTimeout. A later request with its id is answered
	// 404, as the MCP specification asks, so the client initializes again.
	IdleTimeout time.Duration
	// Now is the clock of idleness; nil means time.Now.
	Now func() time.Time
}

// SessionStats counts the front door's MCP sessions.
type SessionStats struct {
	Open           int   // sessions open now
	RefusedPerKey  int64 // initialize refused: the key had MaxPerKey open
	RefusedTotal   int64 // initialize refused: the hub had MaxTotal open
	Expired        int64 // sessions ended for being idle
	ClientsEnded   int64 // sessions their client ended (DELETE)
	ExpiredAnswers int64 // requests answered 404 for naming an expired session
}

// SessionStats returns the counts of the MCP sessions (for /metrics).
func (s *Server) SessionStats() SessionStats { return s.mcp.sessions.stats() }

// sessionTable is the front door's record of MCP sessions: who opened each
// and when it was last used, least recently used first.
type sessionTable struct {
	opts SessionOptions

	mu       sync.Mutex
	byID     map[string]*list.Element // → *sessionEntry
	lru      *list.List               // least recently used first
	perKey   map[string]int           // open and reserved sessions of a key
	reserved int                      // initialize requests running
	// expired remembers the ids of the last sessions ended for being idle
	// (MaxTotal, at most DefaultMaxSessions), to answer them 404; an older
	// one is served as an unknown id is (mcp-go, without a session).
	expired     map[string]bool
	expiredRing []string
	expiredNext int

	refusedKey, refusedTotal, expiredN, ended, expiredAnswers atomic.Int64

	stop chan struct{}
	done chan struct{}
}

type sessionEntry struct {
	id, key string
	last    time.Time
	busy    int          // requests (and GET streams) of the session in flight
	h       http.Handler // the session's streamable HTTP server, to end it
}

func newSessionTable(o SessionOptions) *sessionTable {
	if o.MaxPerKey <= 0 {
		o.MaxPerKey = DefaultMaxSessionsPerKey
	}
	if o.MaxTotal <= 0 {
		o.MaxTotal = DefaultMaxSessions
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultSessionIdleTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &sessionTable{opts: o, byID: map[string]*list.Element{}, lru: list.New(), perKey: map[string]int{},
		expired: map[string]bool{}, expiredRing: make([]string, min(o.MaxTotal, DefaultMaxSessions))}
}

// start sweeps idle sessions every half idle timeout (at least every
// second, at most every minute) until close.
func (t *sessionTable) start() {
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	every := min(max(t.opts.IdleTimeout/2, time.Second), time.Minute)
	go func() {
		defer close(t.done)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tk.C:
				t.sweep()
			}
		}
	}()
}

func (t *sessionTable) close() {
	if t.stop != nil {
		close(t.stop)
		<-t.done
	}
}

// sessionKey is what the per-key cap counts a request's sessions under.
func sessionKey(ctx context.Context) string {
	p := PrincipalFrom(ctx)
	if p.KeyID != "" {
		return "key:" + p.KeyID
	}
	return "principal:" + p.Role + "/" + p.Tenant + "/" + p.Vendor
}

// reservation is an initialize request's place in the table, until mcp-go
// registers its session (bind) or the request ends without one (done).
type reservation struct {
	t     *sessionTable
	key   string
	h     http.Handler
	bound atomic.Bool
}

type reservationKey struct{}

// reserve makes room for a session of key that h serves, after ending the
// sessions that are idle. The error is a *hub.Error saying which cap is
// full.
func (t *sessionTable) reserve(key string, h http.Handler) (*reservation, error) {
	t.sweep()
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.perKey[key]; n >= t.opts.MaxPerKey {
		t.refusedKey.Add(1)
		return nil, &hub.Error{Code: hub.CodeRateLimited, RetryAfter: time.Second, Message: fmt.Sprintf(
			"this key has %d MCP sessions open, the most mcp.max_sessions_per_key allows; reuse one, end one (DELETE with its Mcp-Session-Id), or wait until idle ones end (after mcp.session_idle_timeout, %s)",
			n, t.opts.IdleTimeout)}
	}
	if n := len(t.byID) + t.reserved; n >= t.opts.MaxTotal {
		t.refusedTotal.Add(1)
		return nil, &hub.Error{Code: hub.CodeOverloaded, RetryAfter: time.Second, Message: fmt.Sprintf(
			"the hub has %d MCP sessions open, the most mcp.max_sessions allows; retry later, or use protocol revision 2026-07-28 (no sessions)", n)}
	}
	t.perKey[key]++
	t.reserved++
	return &reservation{t: t, key: key, h: h}, nil
}

// bind records the session mcp-go registered for the reservation.
func (r *reservation) bind(id string) {
	if id == "" || r.bound.Swap(true) {
		return
	}
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved--
	e := &sessionEntry{id: id, key: r.key, last: t.opts.Now(), h: r.h}
	t.byID[id] = t.lru.PushBack(e)
}

// done gives the reservation's place back when no session was registered.
func (r *reservation) done() {
	if r.bound.Swap(true) {
		return
	}
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reserved--
	t.dropKey(r.key)
}

func (t *sessionTable) dropKey(key string) {
	if t.perKey[key]--; t.perKey[key] <= 0 {
		delete(t.perKey, key)
	}
}

// enter notes a request naming session id: it is in use until the
// returned func runs. expired reports an id this table ended for idleness.
func (t *sessionTable) enter(id string) (leave func(), expired bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.byID[id]
	if !ok {
		if t.expired[id] {
			t.expiredAnswers.Add(1)
			return nil, true
		}
		return func() {}, false
	}
	e := el.Value.(*sessionEntry)
	e.busy++
	e.last = t.opts.Now()
	t.lru.MoveToBack(el)
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		e.busy--
		e.last = t.opts.Now()
		if el, ok := t.byID[e.id]; ok {
			t.lru.MoveToBack(el)
		}
	}, false
}

// forget drops a session mcp-go unregistered (the client's DELETE, or an
// expiry's).
func (t *sessionTable) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.byID[id]
	if !ok {
		return
	}
	t.remove(el)
	t.ended.Add(1)
}

func (t *sessionTable) remove(el *list.Element) *sessionEntry {
	e := t.lru.Remove(el).(*sessionEntry)
	delete(t.byID, e.id)
	t.dropKey(e.key)
	return e
}

// sweep ends the sessions idle longer than the idle timeout: each is
// ended as its client's DELETE would end it, and its id is remembered to
// answer 404.
func (t *sessionTable) sweep() {
	now := t.opts.Now()
	var ends []*sessionEntry
	t.mu.Lock()
	for el := t.lru.Front(); el != nil; {
		e := el.Value.(*sessionEntry)
		if now.Sub(e.last) <= t.opts.IdleTimeout {
			break // the rest were used later
		}
		next := el.Next()
		if e.busy == 0 {
			t.remove(el)
			t.rememberExpired(e.id)
			ends = append(ends, e)
		}
		el = next
	}
	t.mu.Unlock()
	for _, e := range ends {
		t.expiredN.Add(1)
		endSession(e.h, e.id)
	}
}

func (t *sessionTable) rememberExpired(id string) {
	if old := t.expiredRing[t.expiredNext]; old != "" {
		delete(t.expired, old)
	}
	t.expiredRing[t.expiredNext] = id
	t.expired[id] = true
	t.expiredNext = (t.expiredNext + 1) % len(t.expiredRing)
}

// endSession ends session id of the streamable HTTP server h as the
// client's DELETE does: mcp-go unregisters it (its hooks run) and drops
// its state.
func endSession(h http.Handler, id string) {
	r, _ := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/mcp", nil)
	r.Header.Set(server.HeaderKeySessionID, id)
	h.ServeHTTP(discardWriter{h: http.Header{}}, r)
}

type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}

func (t *sessionTable) stats() SessionStats {
	t.mu.Lock()
	open := len(t.byID)
	t.mu.Unlock()
	return SessionStats{Open: open, RefusedPerKey: t.refusedKey.Load(), RefusedTotal: t.refusedTotal.Load(),
		Expired: t.expiredN.Load(), ClientsEnded: t.ended.Load(), ExpiredAnswers: t.expiredAnswers.Load()}
}

// sessionHooks records the sessions mcp-go registers for a reserved
// initialize, and forgets those it unregisters.
func (t *sessionTable) sessionHooks(srv *server.MCPServer) {
	h := srv.GetHooks()
	if h == nil {
		h = &server.Hooks{}
		server.WithHooks(h)(srv)
	}
	h.AddOnRegisterSession(func(ctx context.Context, s server.ClientSession) {
		if r, ok := ctx.Value(reservationKey{}).(*reservation); ok {
			r.bind(s.SessionID())
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		t.forget(s.SessionID())
	})
}

var (
	wordInitialize = []byte("initialize")
	unicodeEscape  = []byte(`\u`)
)

// initializeID returns the id of body when it is a JSON-RPC initialize
// request, read as mcp-go reads it (encoding/json: any letter case in the
// key, escapes in the value). A body that has neither the word nor a \u
// escape cannot be one, and is not decoded.
func initializeID(body []byte) (json.RawMessage, bool) {
	if !bytes.Contains(body, wordInitialize) && !bytes.Contains(body, unicodeEscape) {
		return nil, false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	ok := json.Unmarshal(body, &m) == nil && m.Method == string(mcp.MethodInitialize)
	return m.ID, ok
}

// refuseSession answers an initialize the caps refused: a JSON-RPC error
// with the HTTP status of its code (429 rate_limited, 503 overloaded) and
// Retry-After.
func refuseSession(w http.ResponseWriter, id json.RawMessage, err error) {
	e := hub.AsError(err)
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httperr.Status(e.Code))
	_, _ = w.Write(rpcError(id, rpcCode(e.Code), err))
}

// expiredSession answers a request naming a session the table ended.
func expiredSession(w http.ResponseWriter, idle time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(rpcError(nil, rpcInvalidRequest, &hub.Error{Code: hub.CodeNotFound, Message: fmt.Sprintf(
		"the MCP session ended after %s without requests (mcp.session_idle_timeout); send initialize again for a new one", idle)}))
}
