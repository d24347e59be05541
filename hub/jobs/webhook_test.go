package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/retry"
)

func TestSignVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":1}`)
	h := http.Header{}
	h.Set(HeaderTimestamp, "1800000000")
	h.Set(HeaderSignature, Sign("s3cret", now, body))
	tests := []struct {
		name   string
		secret string
		body   string
		now    time.Time
		ok     bool
	}{
		{"valid", "s3cret", `{"id":1}`, now, true},
		{"wrong secret", "other", `{"id":1}`, now, false},
		{"tampered body", "s3cret", `{"id":2}`, now, false},
		{"too old", "s3cret", `{"id":1}`, now.Add(10 * time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.secret, h, []byte(tt.body), tt.now, 0)
			if (err == nil) != tt.ok {
				t.Errorf("Verify = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestWebhooksSignedAndRetried: the receiver checks the signature, fails
// the first delivery with a 500, and gets every event of its tenant, in
// order, and none of another tenant's.
func TestWebhooksSignedAndRetried(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		q := NewQueue(open(t, nil), nil)
		var mu sync.Mutex
		var got []Event
		var calls, bad int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			defer mu.Unlock()
			calls++
			if err := Verify("s3cret", r.Header, body, time.Now(), 0); err != nil {
				bad++
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			if calls == 1 {
				http.Error(w, "boom", http.StatusInternalServerError)
				return
			}
			var e Event
			if err := json.Unmarshal(body, &e); err != nil || r.Header.Get(HeaderEventID) == "" {
				t.Errorf("bad delivery %s: %v", body, err)
			}
			got = append(got, e)
		}))
		defer srv.Close()
		wh := NewWebhooks(q, WebhookOptions{
			For: func(tenant string) (Webhook, bool) {
				return Webhook{URL: srv.URL, Secret: "s3cret"}, tenant == "acme"
			},
			FromStart: true,
			Backoff:   retry.Policy{Base: time.Millisecond, Cap: 2 * time.Millisecond},
			Poll:      10 * time.Millisecond,
			Logger:    quietLogger(),
		})
		done := make(chan error)
		go func() { done <- wh.Run(ctx) }()
		startPool(t, &Pool{Store: q, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return textResult("ok"), nil }})
		if _, err := q.Enqueue(ctx, &hub.Call{Tenant: "other", Name: "t"}); err != nil {
			t.Fatal(err)
		}
		id, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "three deliveries", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= 3 })
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		var sts []Status
		for _, e := range got {
			if e.JobID != id || e.Tenant != "acme" {
				t.Errorf("delivered %+v", e)
			}
			sts = append(sts, e.Status)
		}
		if len(sts) != 3 || sts[0] != Queued || sts[1] != Running || sts[2] != Succeeded {
			t.Errorf("statuses %v, want queued running succeeded", sts)
		}
		if calls != 4 || bad != 0 {
			t.Errorf("%d calls (%d badly signed), want 4 (one retried)", calls, bad)
		}
	})
}

// awayAtFirst is a store whose events cannot be read the first n times,
// as a Redis that is away when the hub starts.
type awayAtFirst struct {
	Store
	mu sync.Mutex
	n  int
}

func (s *awayAtFirst) Events(ctx context.Context, tenant string, after int64, limit int) ([]Event, error) {
	s.mu.Lock()
	away := s.n > 0
	s.n--
	s.mu.Unlock()
	if away {
		return nil, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	}
	return s.Store.Events(ctx, tenant, after, limit)
}

// Webhooks started while the queue's store is away deliver once it
// answers (issue 36: a hub starts while Redis is away): they stopped.
func TestWebhooksStartWhileStoreAway(t *testing.T) {
	forEach(t, func(t *testing.T, open opener) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		q := NewQueue(&awayAtFirst{Store: open(t, nil), n: 3}, nil)
		var mu sync.Mutex
		var got []Event
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var e Event
			if err := json.Unmarshal(body, &e); err != nil {
				t.Errorf("bad delivery %s: %v", body, err)
			}
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
		}))
		defer srv.Close()
		wh := NewWebhooks(q, WebhookOptions{
			For:       func(tenant string) (Webhook, bool) { return Webhook{URL: srv.URL, Secret: "s"}, true },
			FinalOnly: true,
			Poll:      10 * time.Millisecond,
			Logger:    quietLogger(),
		})
		done := make(chan error, 1)
		go func() { done <- wh.Run(ctx) }()
		// Run is following once the store answered: an event made after
		// that is delivered.
		waitFor(t, "the store asked again", func() bool {
			s := q.store.(*awayAtFirst)
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.n < 0
		})
		select {
		case err := <-done:
			t.Fatalf("Run ended while the store was away at its start: %v", err)
		default:
		}
		startPool(t, &Pool{Store: q, Run: func(ctx context.Context, c *hub.Call) (*hub.Result, error) { return textResult("ok"), nil }})
		id, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the job's final event delivered", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) > 0 && got[len(got)-1].JobID == id && got[len(got)-1].Status == Succeeded
		})
		cancel()
		<-done
	})
}
