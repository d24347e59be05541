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
