package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// mcpDo sends an MCP request to /mcp as key (the X-Key header), in session
// sid ("" for none); it returns the status, the session id answered and
// the body.
func mcpDo(t *testing.T, url, method, key, sid, body string) (int, string, string, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url+"/mcp", rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Key", key)
	if sid != "" {
		req.Header.Set(server.HeaderKeySessionID, sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(server.HeaderKeySessionID), string(b), resp.Header
}

func rpcErrorOf(body string) (code, msg string) {
	var m struct {
		Error struct {
			Data struct{ Code, Message string } `json:"data"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	return m.Error.Data.Code, m.Error.Data.Message
}

// TestSessionCapsAndIdleExpiry (issue 32, item 4): initialize is refused
// over the per-key cap (429) and the hub's (503); a session no request used
// for the idle timeout ends as a DELETE would end it (mcp-go forgets it)
// and its id is answered 404; one in use stays; the counts are kept.
func TestSessionCapsAndIdleExpiry(t *testing.T) {
	s, _ := newTestServer(t)
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	s2 := NewServer(s.gw, &Options{
		Sessions: SessionOptions{MaxPerKey: 2, MaxTotal: 3, IdleTimeout: time.Minute, Now: clock.Now},
		Authenticate: func(r *http.Request) (auth.Principal, error) {
			return auth.Principal{KeyID: r.Header.Get("X-Key"), Role: auth.RoleTenant, Tenant: DefaultTenant}, nil
		},
	})
	t.Cleanup(func() { s2.Close() })
	ts := httptest.NewServer(s2)
	defer ts.Close()

	initOK := func(key string) string {
		t.Helper()
		st, sid, body, _ := mcpDo(t, ts.URL, "POST", key, "", initBody)
		if st != 200 || sid == "" {
			t.Fatalf("initialize as %s: %d %q %s", key, st, sid, body)
		}
		return sid
	}
	a1, a2 := initOK("a"), initOK("a")
	st, _, body, hdr := mcpDo(t, ts.URL, "POST", "a", "", initBody)
	if code, msg := rpcErrorOf(body); st != 429 || code != string(hub.CodeRateLimited) || !strings.Contains(msg, "mcp.max_sessions_per_key") || hdr.Get("Retry-After") == "" {
		t.Errorf("a's third initialize: %d %s %v", st, body, hdr)
	}
	// Whatever Mcp-Session-Id an initialize carries, it makes a session.
	st, _, body, _ = mcpDo(t, ts.URL, "POST", "a", a1, initBody)
	if st != 429 {
		t.Errorf("a's initialize inside a session: %d %s", st, body)
	}
	b1 := initOK("b")
	st, _, body, _ = mcpDo(t, ts.URL, "POST", "c", "", initBody)
	if code, msg := rpcErrorOf(body); st != 503 || code != string(hub.CodeOverloaded) || !strings.Contains(msg, "mcp.max_sessions") {
		t.Errorf("c's initialize, the hub full: %d %s", st, body)
	}

	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	clock.Add(30 * time.Second)
	if st, _, body, _ := mcpDo(t, ts.URL, "POST", "a", a1, list); st != 200 {
		t.Fatalf("tools/list in a1: %d %s", st, body)
	}
	clock.Add(40 * time.Second) // a2 and b1 idle 70s, a1 40s
	a3 := initOK("a")           // the sweep before it ends a2 and b1
	if st, _, body, _ := mcpDo(t, ts.URL, "POST", "a", a2, list); st != 404 || !strings.Contains(body, "mcp.session_idle_timeout") {
		t.Errorf("tools/list in the expired a2: %d %s", st, body)
	}
	if st, _, body, _ := mcpDo(t, ts.URL, "GET", "b", b1, ""); st != 404 {
		t.Errorf("GET in the expired b1: %d %s", st, body)
	}
	if st, _, body, _ := mcpDo(t, ts.URL, "POST", "a", a1, list); st != 200 {
		t.Errorf("tools/list in a1, used 40s ago: %d %s", st, body)
	}
	// mcp-go forgot the expired sessions.
	s2.mcp.mu.Lock()
	for _, fs := range s2.mcp.fasts {
		for _, id := range []string{a2, b1} {
			if _, ok := fs.sessions.Load(id); ok {
				t.Errorf("session %s still registered with mcp-go", id)
			}
		}
		if _, ok := fs.sessions.Load(a1); !ok && fs.vendor == "" {
			t.Errorf("a1 is not registered")
		}
	}
	s2.mcp.mu.Unlock()

	// A session with a GET stream open is in use, however long.
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Key", "a")
	req.Header.Set(server.HeaderKeySessionID, a3)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", err, resp)
	}
	clock.Add(2 * time.Minute)
	s2.mcp.sessions.sweep()
	if st, _, body, _ := mcpDo(t, ts.URL, "POST", "a", a3, list); st != 200 {
		t.Errorf("a3 with its GET stream open, 2m on: %d %s", st, body)
	}
	cancel()
	resp.Body.Close()
	waitIdle(t, s2.mcp.sessions, a3)
	clock.Add(2 * time.Minute)
	s2.mcp.sessions.sweep()
	if st, _, _, _ := mcpDo(t, ts.URL, "POST", "a", a3, list); st != 404 {
		t.Errorf("a3, its stream closed 2m ago: %d", st)
	}

	// a1 ended too, 3m unused. A client ends a session itself; the table
	// forgets it.
	a4 := initOK("a")
	st, _, body, _ = mcpDo(t, ts.URL, "DELETE", "a", a4, "")
	if st != 200 {
		t.Errorf("DELETE a4: %d %s", st, body)
	}
	want := SessionStats{Open: 0, RefusedPerKey: 2, RefusedTotal: 1, Expired: 4, ClientsEnded: 1, ExpiredAnswers: 3}
	if got := s2.SessionStats(); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	// The caps count open sessions only: room again.
	initOK("a")
	initOK("a")
}

// waitIdle waits until no request of session id is in flight (the GET
// stream's handler returned after its client went away).
func waitIdle(t *testing.T, tb *sessionTable, id string) {
	t.Helper()
	for {
		tb.mu.Lock()
		el, ok := tb.byID[id]
		busy := ok && el.Value.(*sessionEntry).busy > 0
		tb.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the GET stream's request never ended")
		case <-time.After(time.Millisecond):
		}
	}
}
