package jobs

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/retry"
)

func TestContractWebhookStore(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		clk := newClock()
		s := open(t, clk.Now).(WebhookStore)
		if _, ok, err := s.GetWebhook(ctx, "acme"); ok || err != nil {
			t.Fatalf("GetWebhook before any = %v, %v", ok, err)
		}
		if err := s.PutWebhook(ctx, "acme", Webhook{URL: "https://a.example/h", Secret: "s1"}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutWebhook(ctx, "acme", Webhook{URL: "https://a.example/h2", Secret: "s2"}); err != nil {
			t.Fatal(err)
		}
		if h, ok, err := s.GetWebhook(ctx, "acme"); !ok || err != nil || h != (Webhook{URL: "https://a.example/h2", Secret: "s2"}) {
			t.Errorf("GetWebhook = %+v, %v, %v", h, ok, err)
		}
		if _, ok, _ := s.GetWebhook(ctx, "other"); ok {
			t.Errorf("another tenant sees acme's webhook")
		}
		if err := s.DeleteWebhook(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.GetWebhook(ctx, "acme"); ok {
			t.Errorf("webhook still there after delete")
		}
		first, err := s.ClaimDelivery(ctx, 42, time.Hour)
		second, err2 := s.ClaimDelivery(ctx, 42, time.Hour)
		other, err3 := s.ClaimDelivery(ctx, 43, time.Hour)
		if !first || second || !other || err != nil || err2 != nil || err3 != nil {
			t.Errorf("claims of 42, 42, 43 = %v %v %v (%v %v %v); want true false true", first, second, other, err, err2, err3)
		}
	})
}

// TestWebhooksOnePushPerJobAcrossInstances: two dispatchers (two
// instances) over one queue push each job's final event once, and only
// the final one.
func TestWebhooksOnePushPerJobAcrossInstances(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s := open(t, nil)
		q := NewQueue(s, nil)
		var mu sync.Mutex
		got := map[string][]Status{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var e Event
			body, _ := io.ReadAll(r.Body)
			if err := Verify("s3cret", r.Header, body, time.Now(), 0); err != nil {
				t.Errorf("bad signature: %v", err)
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Errorf("body %s: %v", body, err)
			}
			mu.Lock()
			got[e.JobID] = append(got[e.JobID], e.Status)
			mu.Unlock()
		}))
		defer srv.Close()
		// The jobs first; then two dispatchers read every event.
		startPool(t, &Pool{Store: q, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return textResult("ok"), nil }})
		var ids []string
		for range 5 {
			id, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "t"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			waitStatus(t, q, id, Succeeded)
		}
		var claims atomic.Int32
		var done sync.WaitGroup
		for range 2 {
			wh := NewWebhooks(q, WebhookOptions{
				For:       func(tenant string) (Webhook, bool) { return Webhook{URL: srv.URL, Secret: "s3cret"}, true },
				FinalOnly: true,
				Claim: func(ctx context.Context, id int64) (bool, error) {
					defer claims.Add(1)
					return q.Webhooks().ClaimDelivery(ctx, id, time.Hour)
				},
				FromStart: true,
				Backoff:   retry.Policy{Base: time.Millisecond, Cap: 2 * time.Millisecond},
				Poll:      10 * time.Millisecond,
				Logger:    quietLogger(),
			})
			done.Add(1)
			go func() { defer done.Done(); _ = wh.Run(ctx) }()
		}
		// Each dispatcher decides on each final event once; then the
		// deliveries in flight end with Run.
		waitFor(t, "both dispatchers to claim or skip the 5 final events, and 5 deliveries", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return claims.Load() == 10 && len(got) == 5
		})
		cancel()
		done.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if sts := got[id]; len(sts) != 1 || sts[0] != Succeeded {
				t.Errorf("job %s pushed %v, want [succeeded] once", id, sts)
			}
		}
	})
}
