package orchestrator

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
)

func TestHandlerSSEKeepAlive(t *testing.T) {
	release := make(chan struct{})
	h := newTestHub(t, map[string]tool{"x/wait": func(ctx context.Context, c *hub.Call) (*hub.Result, error) {
		<-release
		return echo(ctx, c)
	}}, &hub.Options{DefaultTimeout: time.Hour})
	p, err := New(Config{Rules: &Rules{Intents: []Intent{{Name: "w", Tool: "x__wait", Pattern: "wait"}}}}, h, h.Catalog(), "")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&Handler{Planner: p, Heartbeat: time.Millisecond, Tenant: func(r *http.Request) string { return r.Header.Get("X-Tenant") }})
	defer srv.Close()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/plan", strings.NewReader(`{"goal":"wait for it"}`))
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Tenant", "acme")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	released := false
	for sc.Scan() {
		line := sc.Text()
		if line == ": keep-alive" && !released {
			close(release) // the run was quiet and the stream stayed alive: let it finish
			released = true
		}
		if strings.HasPrefix(line, "event: ") {
			seen = append(seen, line[len("event: "):])
		}
	}
	if got := strings.Join(seen, ","); got != "progress,progress,progress,result" {
		t.Errorf("events %s, want plan, started, finished, result", got)
	}
	if c := h.Calls(); len(c) != 1 || c[0].Tenant != "acme" {
		t.Errorf("calls %+v, want one as tenant acme", c)
	}
}

func TestHandlerRefusals(t *testing.T) {
	rec := httptest.NewRecorder()
	(&Handler{}).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/plan", nil))
	if rec.Code != 405 || !strings.Contains(rec.Body.String(), "method_not_allowed") {
		t.Errorf("GET: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	(&Handler{Tenant: func(*http.Request) string { return "" }}).ServeHTTP(rec, httptest.NewRequest("POST", "/v1/plan", strings.NewReader(`{"goal":"x"}`)))
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), "forbidden") {
		t.Errorf("no tenant: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	(&Handler{MaxBody: 10}).ServeHTTP(rec, httptest.NewRequest("POST", "/v1/plan", strings.NewReader(`{"goal":"a long goal indeed"}`)))
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), "too_large") {
		t.Errorf("big body: %d %s", rec.Code, rec.Body)
	}
}
