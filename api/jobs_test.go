package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/jobs/redisjobs"
	"github.com/toolhub/toolhub/hub/jobs/sqlitejobs"
	"github.com/toolhub/toolhub/hub/retry"
	"github.com/toolhub/toolhub/internal/x/redistest"
	"github.com/toolhub/toolhub/registry"
)

// jobsFixture is a queue on SQLite, a pool whose Run answers at once
// unless gated, and the job routes behind a tenant taken from X-Tenant
// (as Server.ServeHTTP does after authentication).
type jobsFixture struct {
	q    *jobs.Queue
	srv  *httptest.Server
	runs atomic.Int32
}

func newJobsFixture(t *testing.T, opts *JobRoutesOptions) *jobsFixture {
	t.Helper()
	store, err := sqlitejobs.Open(context.Background(), filepath.Join(t.TempDir(), "jobs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return newJobsFixtureOn(t, store, opts)
}

// newRedisJobsFixture is newJobsFixture on Redis, under a key prefix of its own.
func newRedisJobsFixture(t *testing.T, opts *JobRoutesOptions) *jobsFixture {
	t.Helper()
	rdb := redistest.Client(t)
	prefix := fmt.Sprintf("test:api/jobs:%s:%d:", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	})
	store, err := redisjobs.New(context.Background(), rdb, &redisjobs.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return newJobsFixtureOn(t, store, opts)
}

func newJobsFixtureOn(t *testing.T, store jobs.Store, opts *JobRoutesOptions) *jobsFixture {
	t.Helper()
	f := &jobsFixture{q: jobs.NewQueue(store, nil)}
	t.Cleanup(func() { f.q.Close() })
	quiet := slog.New(slog.DiscardHandler)
	pool := &jobs.Pool{Store: f.q, Logger: quiet, Backoff: retry.Policy{Base: time.Millisecond, Cap: time.Millisecond},
		Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
			f.runs.Add(1)
			return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("done " + c.Name)}}, nil
		}}
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Stop(context.Background()) })
	if opts == nil {
		opts = &JobRoutesOptions{}
	}
	opts.Logger = quiet
	mux := http.NewServeMux()
	JobRoutes(f.q, opts)(mux)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := auth.Principal{Role: auth.RoleTenant, Tenant: r.Header.Get("X-Tenant")}
		if r.Header.Get("X-Operator") == "yes" {
			p = auth.Principal{Role: auth.RoleOperator}
		}
		mux.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *jobsFixture) do(t *testing.T, method, path, tenant string, hdr map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("X-Tenant", tenant)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: body %q: %v", method, path, b, err)
	}
	return resp.StatusCode, m
}

func (f *jobsFixture) waitStatus(t *testing.T, id string, want jobs.Status) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := f.q.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s, want %s", id, j.Status, want)
		}
		time.Sleep(2 * time.Millisecond) // polling a condition, with a deadline
	}
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func TestJobsGetTenantIsolation(t *testing.T) {
	f := newJobsFixture(t, nil)
	id, err := f.q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "weather.current", Arguments: map[string]any{"city": "Paris"}})
	if err != nil {
		t.Fatal(err)
	}
	f.waitStatus(t, id, jobs.Succeeded)
	tests := []struct {
		name, tenant, id string
		want             int
		code             string
	}{
		{"own job", "acme", id, http.StatusOK, ""},
		{"another tenant's job", "globex", id, http.StatusNotFound, "not_found"},
		{"missing job", "acme", "job_nope", http.StatusNotFound, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m := f.do(t, "GET", "/v1/jobs/"+tt.id, tt.tenant, nil, "")
			if status != tt.want || errCode(m) != tt.code {
				t.Fatalf("status %d code %q, want %d %q: %v", status, errCode(m), tt.want, tt.code, m)
			}
			if tt.want == http.StatusOK {
				if m["status"] != "succeeded" || m["tenant"] != "acme" || m["id"] != id {
					t.Errorf("job = %v", m)
				}
				res, _ := m["result"].(map[string]any)
				if d := cmp.Diff([]any{map[string]any{"type": "text", "text": "done weather.current"}}, res["content"]); d != "" {
					t.Errorf("result content (-want +got):\n%s", d)
				}
				if _, leaked := m["Owner"]; leaked {
					t.Errorf("lease owner leaked: %v", m)
				}
			}
		})
	}
	// Another tenant cannot cancel it either; its owner cannot cancel a finished job.
	if status, _ := f.do(t, "POST", "/v1/jobs/"+id+"/cancel", "globex", nil, ""); status != http.StatusNotFound {
		t.Errorf("cancel by another tenant: %d", status)
	}
	if status, m := f.do(t, "POST", "/v1/jobs/"+id+"/cancel", "acme", nil, ""); status != http.StatusConflict || errCode(m) != "conflict" {
		t.Errorf("cancel a finished job: %d %v", status, m)
	}
	parked, _ := f.q.Park(context.Background(), &hub.Call{Tenant: "acme", Name: "t"}, "review")
	if status, m := f.do(t, "POST", "/v1/jobs/"+parked+"/cancel", "acme", nil, ""); status != http.StatusOK || m["status"] != "canceled" {
		t.Errorf("cancel a parked job: %d %v", status, m)
	}
}

func TestJobsAdminApproveReject(t *testing.T) {
	f := newJobsFixture(t, nil)
	ctx := context.Background()
	a, _ := f.q.Park(ctx, &hub.Call{Tenant: "acme", Name: "image.generate"}, "over budget")
	b, _ := f.q.Park(ctx, &hub.Call{Tenant: "acme", Name: "image.generate"}, "over budget")
	op := map[string]string{"X-Operator": "yes"}

	if status, m := f.do(t, "POST", "/v1/admin/jobs/"+a+"/approve", "acme", nil, ""); status != http.StatusForbidden || errCode(m) != "forbidden" {
		t.Fatalf("approve by a tenant: %d %v", status, m)
	}
	if status, m := f.do(t, "POST", "/v1/admin/jobs/"+a+"/approve", "ops", op, ""); status != http.StatusOK || m["status"] != "queued" {
		t.Fatalf("approve: %d %v", status, m)
	}
	f.waitStatus(t, a, jobs.Succeeded)
	if status, m := f.do(t, "POST", "/v1/admin/jobs/"+a+"/approve", "ops", op, ""); status != http.StatusConflict || errCode(m) != "conflict" {
		t.Errorf("approve twice: %d %v", status, m)
	}
	if status, m := f.do(t, "POST", "/v1/admin/jobs/"+b+"/reject", "ops", op, `{"reason":"too expensive"}`); status != http.StatusOK || m["status"] != "rejected" || m["last_error"] != "too expensive" {
		t.Errorf("reject: %d %v", status, m)
	}
	if status, _ := f.do(t, "POST", "/v1/admin/jobs/job_nope/reject", "ops", op, ""); status != http.StatusNotFound {
		t.Errorf("reject a missing job: %d", status)
	}
	if n := f.runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1 (the rejected job never runs)", n)
	}
}

func TestJobsNeedATenant(t *testing.T) {
	f := newJobsFixture(t, nil)
	id, _ := f.q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "t"})
	// An operator key has no tenant: it does not read tenants' jobs here.
	if status, m := f.do(t, "GET", "/v1/jobs/"+id, "", map[string]string{"X-Operator": "yes"}, ""); status != http.StatusForbidden {
		t.Errorf("GET with an operator key: %d %v", status, m)
	}
}

// wsClient reads events from /v1/events.
type wsClient struct {
	conn   *websocket.Conn
	events chan jobs.Event
	pings  atomic.Int32
}

func (f *jobsFixture) dial(t *testing.T, tenant string, lastID int64) *wsClient {
	t.Helper()
	u := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/v1/events"
	if lastID > 0 {
		u += fmt.Sprintf("?last_event_id=%d", lastID)
	}
	conn, resp, err := websocket.DefaultDialer.Dial(u, http.Header{"X-Tenant": {tenant}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	resp.Body.Close()
	c := &wsClient{conn: conn, events: make(chan jobs.Event, 100)}
	conn.SetPingHandler(func(data string) error {
		c.pings.Add(1)
		return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	go func() {
		defer close(c.events)
		for {
			var e jobs.Event
			if err := conn.ReadJSON(&e); err != nil {
				return
			}
			c.events <- e
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return c
}

// next returns the next n events.
func (c *wsClient) next(t *testing.T, n int) []jobs.Event {
	t.Helper()
	var out []jobs.Event
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case e, ok := <-c.events:
			if !ok {
				t.Fatalf("stream closed after %d of %d events", len(out), n)
			}
			out = append(out, e)
		case <-timeout:
			t.Fatalf("got %d of %d events within 10s: %+v", len(out), n, out)
		}
	}
	return out
}

type jobStatus struct {
	Job    string
	Status jobs.Status
}

func summary(evs []jobs.Event) []jobStatus {
	out := make([]jobStatus, len(evs))
	for i, e := range evs {
		out[i] = jobStatus{e.JobID, e.Status}
	}
	return out
}

func TestJobsEventsWebSocketResume(t *testing.T) {
	opts := func() *JobRoutesOptions {
		return &JobRoutesOptions{Heartbeat: 20 * time.Millisecond, Poll: 50 * time.Millisecond}
	}
	t.Run("sqlite", func(t *testing.T) { testEventsResume(t, newJobsFixture(t, opts())) })
	t.Run("redis", func(t *testing.T) { testEventsResume(t, newRedisJobsFixture(t, opts())) })
}

func testEventsResume(t *testing.T, f *jobsFixture) {
	ctx := context.Background()
	c := f.dial(t, "acme", 0)

	// Another tenant's job: never seen by acme.
	if _, err := f.q.Enqueue(ctx, &hub.Call{Tenant: "globex", Name: "t"}); err != nil {
		t.Fatal(err)
	}
	j1, _ := f.q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "t"})
	got := c.next(t, 3)
	if d := cmp.Diff([]jobStatus{{j1, jobs.Queued}, {j1, jobs.Running}, {j1, jobs.Succeeded}}, summary(got)); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	if got[2].Result == nil {
		t.Errorf("succeeded event without result")
	}
	// Heartbeats arrive while idle.
	deadline := time.Now().Add(10 * time.Second)
	for c.pings.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond) // polling a condition, with a deadline
	}
	if c.pings.Load() < 2 {
		t.Errorf("%d pings, want at least 2", c.pings.Load())
	}

	// Disconnect; a job runs meanwhile; reconnect from the last event id.
	last := got[2].ID
	c.conn.Close()
	j2, _ := f.q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "t"})
	f.waitStatus(t, j2, jobs.Succeeded)
	c2 := f.dial(t, "acme", last)
	j3, _ := f.q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "t"})
	got = c2.next(t, 6)
	want := []jobStatus{{j2, jobs.Queued}, {j2, jobs.Running}, {j2, jobs.Succeeded}, {j3, jobs.Queued}, {j3, jobs.Running}, {j3, jobs.Succeeded}}
	if d := cmp.Diff(want, summary(got)); d != "" {
		t.Errorf("resumed events (-want +got):\n%s", d)
	}
	for i := 1; i < len(got); i++ {
		if got[i].ID <= got[i-1].ID || got[0].ID <= last {
			t.Errorf("event ids not increasing after %d: %d, %d", last, got[i-1].ID, got[i].ID)
		}
	}
}

func TestJobsEventsBadLastEventID(t *testing.T) {
	f := newJobsFixture(t, nil)
	status, m := f.do(t, "GET", "/v1/events?last_event_id=abc", "acme", nil, "")
	if status != http.StatusBadRequest || errCode(m) != "invalid_request" {
		t.Errorf("status %d %v", status, m)
	}
}

func TestJobsEventsEndOnDone(t *testing.T) {
	done := make(chan struct{})
	f := newJobsFixture(t, &JobRoutesOptions{Done: done})
	c := f.dial(t, "acme", 0)
	close(done)
	select {
	case _, ok := <-c.events:
		if ok {
			t.Fatalf("got an event, want the stream closed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream still open 10s after Done")
	}
}

// TestJobsWiredIntoServer wires the job routes the way internal/app does: a
// Server with authentication, Options.Routes = JobRoutes, and a Pool that
// runs jobs through the gateway.
func TestJobsWiredIntoServer(t *testing.T) {
	cat := registry.NewCatalog()
	in := json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`)
	cat.SetVendorTools("weather-a", []registry.ToolDef{{Name: "current_weather", InputSchema: in}})
	var keys atomic.Value
	gw := hub.NewGateway(cat, upstreams{"weather-a": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		keys.Store(c.Meta[jobs.MetaIdempotencyKey])
		return &hub.Result{Content: []mcp.Content{mcp.NewTextContent("sunny in " + c.Arguments["city"].(string))}}, nil
	}}, nil)
	store, err := sqlitejobs.Open(context.Background(), filepath.Join(t.TempDir(), "jobs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	q := jobs.NewQueue(store, nil)
	defer q.Close()
	pool := &jobs.Pool{Store: q, Run: gw.Call, Logger: slog.New(slog.DiscardHandler)}
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer pool.Stop(context.Background())
	s := NewServer(gw, &Options{
		Authenticate: func(r *http.Request) (auth.Principal, error) {
			if tenant, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				return auth.Principal{Role: auth.RoleTenant, Tenant: tenant}, nil
			}
			return auth.Principal{}, errors.New("no token")
		},
		Routes: JobRoutes(q, &JobRoutesOptions{Logger: slog.New(slog.DiscardHandler)}),
	})
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()

	conn, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+"/v1/events", http.Header{"Authorization": {"Bearer acme"}})
	if err != nil {
		t.Fatalf("dial through the server: %v", err)
	}
	resp.Body.Close()
	defer conn.Close()

	id, err := q.Enqueue(context.Background(), &hub.Call{Tenant: "acme", Name: "weather-a__current_weather", Arguments: map[string]any{"city": "Paris"}})
	if err != nil {
		t.Fatal(err)
	}
	var last jobs.Event
	for last.Status != jobs.Succeeded {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := conn.ReadJSON(&last); err != nil {
			t.Fatalf("reading events: %v", err)
		}
	}
	if last.JobID != id || !strings.Contains(string(last.Result), "sunny in Paris") {
		t.Errorf("last event %+v", last)
	}
	if keys.Load() != id {
		t.Errorf("vendor saw idempotency key %v, want %s", keys.Load(), id)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/v1/jobs/"+id, nil)
	req.Header.Set("Authorization", "Bearer acme")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Body.Close()
	var j jobs.Job
	if err := json.NewDecoder(r2.Body).Decode(&j); err != nil || r2.StatusCode != 200 || j.Status != jobs.Succeeded {
		t.Errorf("GET job: %d %+v %v", r2.StatusCode, j, err)
	}
}
