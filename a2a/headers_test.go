package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// pingAgent is an a2a-go agent whose one skill, ping, answers "pong: "
// and the text it got.
type pingAgent struct{}

func (pingAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		yield(sdk.NewMessage(sdk.MessageRoleAgent, sdk.NewTextPart("pong: "+textOf(ec.Message))), nil)
	}
}

func (pingAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {}
}

// bearerAgent serves pingAgent's card and endpoint to requests with
// "Authorization: Bearer <token>" only; a request without it gets 401
// with the Authorization header it sent echoed back (as a careless agent
// might), so that a leak would show.
type bearerAgent struct {
	ts             *httptest.Server
	token          string
	cardOK, callOK atomic.Int64
	mu             sync.Mutex
	refused        []string // Authorization headers refused
}

func startBearerAgent(t *testing.T, token string) *bearerAgent {
	a := &bearerAgent{token: token}
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(pingAgent{}))
	a.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer "+a.token {
			a.mu.Lock()
			a.refused = append(a.refused, got)
			a.mu.Unlock()
			http.Error(w, "unauthorized: you sent "+got, http.StatusUnauthorized)
			return
		}
		if r.URL.Path == WellKnownCardPath {
			a.cardOK.Add(1)
			card := &sdk.AgentCard{Name: "Bearer Agent", Description: "needs a token", Version: "1",
				SupportedInterfaces: []*sdk.AgentInterface{sdk.NewAgentInterface(a.ts.URL+"/a2a", sdk.TransportProtocolJSONRPC)},
				DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
				Skills: []sdk.AgentSkill{{ID: "ping", Name: "ping", Description: "Answers pong.", Tags: []string{"test"}}}}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(card)
			return
		}
		a.callOK.Add(1)
		rpc.ServeHTTP(w, r)
	}))
	t.Cleanup(a.ts.Close)
	return a
}

// TestA2AVendorHeaders: an agent that wants a bearer token gets it, from
// the environment, on the card fetch and on calls; the token shows
// nowhere: not in logs, status, errors or the spec's JSON.
func TestA2AVendorHeaders(t *testing.T) {
	const secret = "s3cret-token-0123456789"
	agent := startBearerAgent(t, secret)
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env := map[string]string{"AGENT_TOKEN": secret, "WRONG_TOKEN": "not-the-token-987654"}
	cat := registry.NewCatalog()
	m := NewManager(cat, &Options{Logger: logger, RefreshInterval: -1,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	t.Cleanup(func() { m.Close() })

	spec := registry.Vendor{ID: "bearer", A2A: &registry.A2ASpec{Card: agent.ts.URL,
		Headers: map[string]string{"Authorization": "Bearer ${AGENT_TOKEN}"}}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	addReady(t, m, spec)
	gw := hub.NewGateway(cat, m, &hub.Options{DefaultTimeout: 20 * time.Second, Logger: logger})
	res, err := gw.Call(t.Context(), &hub.Call{Tenant: "default", Name: "bearer__ping", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := hub.TextOf(res); got != "pong: hi" {
		t.Errorf("answer = %q", got)
	}
	if agent.cardOK.Load() == 0 || agent.callOK.Load() == 0 {
		t.Errorf("authorized requests: card %d, calls %d", agent.cardOK.Load(), agent.callOK.Load())
	}
	if err := m.Ping(t.Context(), "bearer"); err != nil {
		t.Errorf("Ping: %v", err)
	}

	// Without headers, or with the wrong token, the card is refused.
	plain := registry.Vendor{ID: "plain", A2A: &registry.A2ASpec{Card: agent.ts.URL}}
	wrong := registry.Vendor{ID: "wrong", A2A: &registry.A2ASpec{Card: agent.ts.URL, Headers: map[string]string{"Authorization": "Bearer ${WRONG_TOKEN}"}}}
	missing := registry.Vendor{ID: "missing", A2A: &registry.A2ASpec{Card: agent.ts.URL, Headers: map[string]string{"Authorization": "Bearer ${NO_SUCH_VAR}"}}}
	for _, s := range []registry.Vendor{plain, wrong, missing} {
		if err := m.Add(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		err := m.Refresh(t.Context(), s.ID)
		if err == nil {
			t.Errorf("%s: the card was fetched", s.ID)
			continue
		}
		if strings.Contains(err.Error(), env["WRONG_TOKEN"]) {
			t.Errorf("%s: the error shows the header value: %v", s.ID, err)
		}
		if st := m.Status(s.ID); st.State != StateUnavailable || strings.Contains(st.LastError, env["WRONG_TOKEN"]) {
			t.Errorf("%s: status %+v", s.ID, st)
		}
	}
	if err := m.Refresh(t.Context(), "missing"); err == nil || !strings.Contains(err.Error(), "NO_SUCH_VAR") {
		t.Errorf("missing variable: %v, want one naming it", err)
	}
	if err := m.Refresh(t.Context(), "wrong"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v, want the 401", err)
	}
	agent.mu.Lock()
	refused := strings.Join(agent.refused, "|")
	agent.mu.Unlock()
	if !strings.Contains(refused, env["WRONG_TOKEN"]) {
		t.Errorf("the agent never got the wrong token: %q", refused)
	}

	// The secrets show nowhere.
	specJSON, _ := json.Marshal([]registry.Vendor{spec, wrong})
	if !strings.Contains(string(specJSON), "${AGENT_TOKEN}") {
		t.Errorf("spec JSON lost the reference: %s", specJSON)
	}
	statusJSON, _ := json.Marshal(m.Statuses())
	logMu.Lock()
	logText := logs.String()
	logMu.Unlock()
	for name, text := range map[string]string{"spec JSON": string(specJSON), "status JSON": string(statusJSON), "logs": logText} {
		for _, v := range env {
			if strings.Contains(text, v) {
				t.Errorf("%s shows a secret:\n%s", name, text)
			}
		}
	}
	if !strings.Contains(logText, "a2a agent card fetch failed") {
		t.Errorf("the refused fetches were not logged:\n%s", logText)
	}
}

// TestA2AVendorHeadersStayOnTheirHosts: the headers go to the card's and
// the interface's hosts, not to another host a request is sent to.
func TestA2AVendorHeadersStayOnTheirHosts(t *testing.T) {
	h, err := expandHeaders(&registry.A2ASpec{Card: "https://agent.example/card", Headers: map[string]string{"X-Key": "${K}"}},
		func(string) (string, bool) { return "abcdef", true })
	if err != nil {
		t.Fatal(err)
	}
	h.allow("https://rpc.example:8443/a2a")
	var sent []string
	rt := h.transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = append(sent, r.URL.Host+"="+r.Header.Get("X-Key"))
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
	}))
	for _, u := range []string{"https://agent.example/card", "https://rpc.example:8443/a2a", "https://elsewhere.example/"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	want := "agent.example=abcdef rpc.example:8443=abcdef elsewhere.example="
	if got := strings.Join(sent, " "); got != want {
		t.Errorf("sent %q, want %q", got, want)
	}
	if got := h.redact("token abcdef leaked"); got != "token [redacted] leaked" {
		t.Errorf("redact = %q", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
