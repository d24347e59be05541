package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/hub/jobs"
)

// TestJobResultPushedByWebhookAndA2A: a tenant registers a webhook with
// PUT /v1/webhook and an A2A client sets a push config with its message;
// a queued call's result reaches both, once on the webhook (signed, with
// its event id), through the outbound guard, which refuses a metadata
// address on both.
func TestJobResultPushedByWebhookAndA2A(t *testing.T) {
	v, vendorURL := serveExample(t, vendors.Doubao)
	setMode := func(m vendors.Mode) {
		k := v.Knobs()
		k.Mode = m
		if err := v.SetKnobs(k); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var hooks []jobs.Event
	var a2aStates []sdk.TaskState
	const secret = "a-long-webhook-secret"
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/hook":
			if err := jobs.Verify(secret, r.Header, body, time.Now(), 0); err != nil || r.Header.Get(jobs.HeaderEventID) == "" {
				t.Errorf("webhook: %v, event id %q", err, r.Header.Get(jobs.HeaderEventID))
			}
			var e jobs.Event
			_ = json.Unmarshal(body, &e)
			hooks = append(hooks, e)
		case "/a2a":
			if r.Header.Get("A2A-Notification-Token") != "tok" {
				t.Errorf("a2a push without its token: %v", r.Header)
			}
			var sr sdk.StreamResponse
			if err := json.Unmarshal(body, &sr); err != nil {
				t.Errorf("a2a push %s: %v", body, err)
			}
			switch e := sr.Event.(type) {
			case *sdk.Task:
				a2aStates = append(a2aStates, e.Status.State)
			case *sdk.TaskStatusUpdateEvent:
				a2aStates = append(a2aStates, e.Status.State)
			}
		}
	}))
	t.Cleanup(recv.Close)
	vaddr, raddr := strings.TrimPrefix(vendorURL, "http://"), strings.TrimPrefix(recv.URL, "http://")
	cfg := parse(t, `
data: `+t.TempDir()+`
outbound: {loopback_only: true, allow: ["`+vaddr+`", "`+raddr+`"]}
vendors:
  - {id: doubao, mcp: {transport: http, url: "`+vendorURL+`/mcp"}, probe: {disabled: true}}
capabilities:
  - name: image.generate
    input_schema: {type: object, required: [prompt], properties: {prompt: {type: string}}}
    chain:
      - tool: doubao/generate_image
fallback:
  capabilities: {image.generate: {queue: true}}
`)
	var logs syncLog
	a, err := New(t.Context(), cfg, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	waitTools(t, a, "doubao", true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = a.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	base := "http://" + ln.Addr().String()

	put := func(url string) (int, string) {
		b, _ := json.Marshal(map[string]string{"url": url, "secret": secret})
		req, _ := http.NewRequest(http.MethodPut, base+"/v1/webhook", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if code, body := put("http://169.254.169.254/latest/meta-data"); code != http.StatusBadRequest || !strings.Contains(body, "outbound guard") {
		t.Errorf("a metadata address as webhook: %d %s", code, body)
	}
	if code, body := put(recv.URL + "/hook"); code != http.StatusOK {
		t.Fatalf("PUT /v1/webhook: %d %s", code, body)
	}

	card, err := agentcard.DefaultResolver.Resolve(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	if !card.Capabilities.PushNotifications {
		t.Errorf("the agent card does not offer push notifications")
	}
	client, err := a2aclient.NewFromCard(t.Context(), card)
	if err != nil {
		t.Fatal(err)
	}
	send := func(pushURL string) (sdk.SendMessageResult, error) {
		msg := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewDataPart(map[string]any{"prompt": "a red fox"}))
		msg.Metadata = map[string]any{"skill": "image.generate"}
		return client.SendMessage(t.Context(), &sdk.SendMessageRequest{Message: msg,
			Config: &sdk.SendMessageConfig{PushConfig: &sdk.PushConfig{URL: pushURL, Token: "tok"}}})
	}
	if _, err := send("http://169.254.169.254/latest/meta-data"); err == nil || !strings.Contains(err.Error(), "outbound guard") {
		t.Errorf("a metadata address as A2A push URL: %v", err)
	}
	// The guard refused both itself: the sandbox (loopback_only) that keeps
	// this test on the machine never had to stop a dial.
	if l := logs.String(); strings.Contains(l, "loopback_only refused") {
		t.Errorf("the outbound sandbox had to stop a dial:\n%s", l)
	}
	setMode(vendors.ModeHTTP500)
	res, err := send(recv.URL + "/a2a")
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*sdk.Task)
	if !ok || task.Status.State != sdk.TaskStateWorking {
		t.Fatalf("SendMessage = %#v, want a working task (queued)", res)
	}
	jobID, _ := task.Metadata["toolhub/job_id"].(string)
	setMode(vendors.ModeOK)
	if _, err := a.pool.Wake(t.Context()); err != nil { // the vendor is back
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n, done := len(hooks), len(a2aStates) > 0 && a2aStates[len(a2aStates)-1] == sdk.TaskStateCompleted
		mu.Unlock()
		if n > 0 && done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pushes so far: webhook %d, a2a %v", n, a2aStates)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hooks) != 1 || hooks[0].JobID != jobID || hooks[0].Status != jobs.Succeeded || !strings.Contains(string(hooks[0].Result), "image") {
		t.Errorf("webhook deliveries %+v, want the job's result once", hooks)
	}
}

// syncLog is a log destination safe for concurrent writes.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
