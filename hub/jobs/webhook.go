package jobs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/hub/retry"
)

// Webhook headers.
const (
	HeaderSignature = "X-Toolhub-Signature" // "sha256=" + hex HMAC-SHA256(secret, timestamp + "." + body)
	HeaderTimestamp = "X-Toolhub-Timestamp" // unix seconds
	HeaderEventID   = "X-Toolhub-Event-Id"  // the event id: receivers deduplicate on it
)

// Webhook is where a tenant wants its job events pushed.
type Webhook struct {
	URL    string
	Secret string
}

// Sign returns the X-Toolhub-Signature value for body sent at ts.
func Sign(secret string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a webhook request's signature and that its timestamp is
// within tolerance of now (zero tolerance means 5 minutes). Receivers in
// Go can use it; others recompute [Sign].
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = 5 * time.Minute
	}
	sec, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return fmt.Errorf("jobs: webhook: bad %s header: %w", HeaderTimestamp, err)
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return fmt.Errorf("jobs: webhook: timestamp %s is more than %s from now", ts.UTC(), tolerance)
	}
	want := Sign(secret, ts, body)
	if !hmac.Equal([]byte(want), []byte(h.Get(HeaderSignature))) {
		return fmt.Errorf("jobs: webhook: signature mismatch")
	}
	return nil
}

// WebhookOptions configure a [Webhooks] dispatcher. Zero fields mean the defaults.
type WebhookOptions struct {
	// For returns a tenant's webhook, or false when it has none.
	For func(tenant string) (Webhook, bool)
	// Client sends the requests; nil means a client with a 10s timeout.
	Client *http.Client
	// Attempts per event; zero means 6.
	Attempts int
	// Backoff between attempts; zero means 1s doubling to 30s, full jitter.
	Backoff retry.Policy
	// After is the event id to start after (a cursor the caller kept);
	// zero means "from now": the latest event when Run starts, unless
	// FromStart is set.
	After int64
	// FromStart delivers every event still in the store when After is zero.
	FromStart bool
	// Poll is how often to look for events made on other instances; zero
	// means 1s.
	Poll time.Duration
	// FinalOnly delivers only final events (the result, or the failure):
	// one push per job.
	FinalOnly bool
	// Claim, if set, is asked before an event is delivered: false means
	// another instance delivers it (WebhookStore.ClaimDelivery), so that
	// instances sharing a queue push each event once.
	Claim func(ctx context.Context, eventID int64) (bool, error)
	// Now is the clock for signatures; nil means time.Now.
	Now func() time.Time
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Webhooks pushes job events to tenants' webhooks: one POST per event, the
// JSON [Event] as body, signed; a failure (an error, or a status other
// than 2xx) is retried with backoff, a tenant's events in order, tenants
// independent of each other. Delivery is at least once: receivers
// deduplicate on X-Toolhub-Event-Id. Run one dispatcher per hub (each
// instance running one delivers each event once per instance).
type Webhooks struct {
	q    *Queue
	opts WebhookOptions

	mu      sync.Mutex
	tenants map[string]chan Event
	wg      sync.WaitGroup
}

// NewWebhooks returns a dispatcher of q's events.
func NewWebhooks(q *Queue, opts WebhookOptions) *Webhooks {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 6
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Webhooks{q: q, opts: opts, tenants: map[string]chan Event{}}
}

// Run delivers events until ctx is done, then waits for deliveries in flight.
// A store that does not answer when Run starts (a hub started while its
// Redis was away) is asked again every Poll until it does: "from now" is
// then.
func (w *Webhooks) Run(ctx context.Context) error {
	after := w.opts.After
	if after == 0 && !w.opts.FromStart {
		last, err := w.lastID(ctx)
		for warned := false; err != nil; warned = true {
			if !warned {
				w.opts.Logger.Warn("jobs: webhooks: the queue's events cannot be read yet; retrying", "err", err)
			}
			t := time.NewTimer(w.poll())
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			last, err = w.lastID(ctx)
		}
		after = last
	}
	err := w.q.Follow(ctx, "", after, w.opts.Poll, func(e Event) error {
		if w.opts.For == nil || w.opts.FinalOnly && !e.Status.Final() {
			return nil
		}
		if _, ok := w.opts.For(e.Tenant); !ok {
			return nil
		}
		select {
		case w.tenantChan(ctx, e.Tenant) <- e:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	w.wg.Wait()
	return err
}

// poll is WebhookOptions.Poll, or its default.
func (w *Webhooks) poll() time.Duration {
	if w.opts.Poll > 0 {
		return w.opts.Poll
	}
	return time.Second
}

func (w *Webhooks) lastID(ctx context.Context) (int64, error) {
	var last int64
	for {
		evs, err := w.q.Events(ctx, "", last, 1000)
		if err != nil {
			return 0, err
		}
		if len(evs) == 0 {
			return last, nil
		}
		last = evs[len(evs)-1].ID
	}
}

func (w *Webhooks) tenantChan(ctx context.Context, tenant string) chan Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.tenants[tenant]
	if !ok {
		ch = make(chan Event, 1024)
		w.tenants[tenant] = ch
		w.wg.Add(1)
		go w.deliverLoop(ctx, tenant, ch)
	}
	return ch
}

func (w *Webhooks) deliverLoop(ctx context.Context, tenant string, ch chan Event) {
	defer w.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-ch:
			hook, ok := w.opts.For(tenant)
			if !ok {
				continue
			}
			if w.opts.Claim != nil {
				mine, err := w.opts.Claim(ctx, e.ID)
				if err != nil && ctx.Err() == nil {
					w.opts.Logger.Warn("jobs: webhook: claiming the delivery failed; delivering anyway (receivers deduplicate on the event id)", "event", e.ID, "err", err)
				}
				if err == nil && !mine {
					continue // another instance delivers it
				}
			}
			if err := w.deliver(ctx, hook, e); err != nil && ctx.Err() == nil {
				w.opts.Logger.Warn("jobs: webhook delivery gave up", "tenant", tenant, "event", e.ID, "job", e.JobID, "err", err)
			}
		}
	}
}

// deliver posts one event, retrying.
func (w *Webhooks) deliver(ctx context.Context, hook Webhook, e Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	var last error
	for n := range w.opts.Attempts {
		if n > 0 {
			t := time.NewTimer(w.opts.Backoff.Backoff(n - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if last = w.post(ctx, hook, e, body); last == nil {
			return nil
		}
	}
	return fmt.Errorf("after %d attempts: %w", w.opts.Attempts, last)
}

func (w *Webhooks) post(ctx context.Context, hook Webhook, e Event, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	now := w.opts.Now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "toolhub-webhooks")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderSignature, Sign(hook.Secret, now, body))
	req.Header.Set(HeaderEventID, strconv.FormatInt(e.ID, 10))
	resp, err := w.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var b strings.Builder
		buf := make([]byte, 256)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return fmt.Errorf("webhook %s answered %s: %s", hook.URL, resp.Status, b.String())
	}
	return nil
}
