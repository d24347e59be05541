package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"

	"github.com/toolhub/toolhub/hub/retry"
)

// pushSender POSTs push notifications the way the SDK's HTTP sender does
// (a StreamResponse as JSON, A2A-Notification-Token, Authorization), but
// through the client it is given (the outbound guard's), retrying a failed
// delivery with backoff. A delivery that still fails is logged: it never
// stops the task.
type pushSender struct {
	client   *http.Client
	attempts int
	backoff  retry.Policy
	log      *slog.Logger
}

var _ push.Sender = (*pushSender)(nil)

func (s *pushSender) SendPush(ctx context.Context, cfg *sdk.PushConfig, event sdk.Event) error {
	body, err := json.Marshal(sdk.StreamResponse{Event: event})
	if err != nil {
		s.log.Warn("a2a: push notification not sent: encoding the event failed", "url", cfg.URL, "err", err)
		return nil
	}
	var last error
	for n := range s.attempts {
		if n > 0 {
			t := time.NewTimer(s.backoff.Backoff(n - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		if last = s.post(ctx, cfg, body); last == nil {
			return nil
		}
	}
	s.log.Warn("a2a: push notification gave up", "url", cfg.URL, "attempts", s.attempts, "err", last)
	return nil
}

func (s *pushSender) post(ctx context.Context, cfg *sdk.PushConfig, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.Token != "" {
		req.Header.Set("A2A-Notification-Token", cfg.Token)
	}
	if cfg.Auth != nil && cfg.Auth.Credentials != "" {
		switch strings.ToLower(cfg.Auth.Scheme) {
		case "bearer":
			req.Header.Set("Authorization", "Bearer "+cfg.Auth.Credentials)
		case "basic":
			req.Header.Set("Authorization", "Basic "+cfg.Auth.Credentials)
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("push endpoint answered %s", resp.Status)
	}
	return nil
}

// guardedPushStore refuses push configs whose URL the outbound guard
// refuses, when they are set (tasks/pushNotificationConfig/set, or with
// a message), with a clear error.
type guardedPushStore struct {
	push.ConfigStore
	check func(ctx context.Context, rawURL string) error
}

func (g guardedPushStore) Save(ctx context.Context, id sdk.TaskID, c *sdk.PushConfig) (*sdk.PushConfig, error) {
	if c == nil || c.URL == "" {
		return nil, fmt.Errorf("%w: a push notification config needs a url", sdk.ErrInvalidParams)
	}
	if err := g.check(ctx, c.URL); err != nil {
		return nil, fmt.Errorf("%w: push notification url %q is refused by toolhub's outbound guard: %v", sdk.ErrInvalidParams, c.URL, err)
	}
	return g.ConfigStore.Save(ctx, id, c)
}
