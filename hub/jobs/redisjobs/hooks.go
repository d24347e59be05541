package redisjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/hub/jobs"
)

var _ jobs.WebhookStore = (*Store)(nil)

func (s *Store) PutWebhook(ctx context.Context, tenant string, h jobs.Webhook) error {
	b, _ := json.Marshal(h)
	if err := s.rdb.HSet(ctx, s.p+"webhooks", tenant, b).Err(); err != nil {
		return fmt.Errorf("jobs: put webhook of %s: %w", tenant, err)
	}
	return nil
}

func (s *Store) GetWebhook(ctx context.Context, tenant string) (jobs.Webhook, bool, error) {
	b, err := s.rdb.HGet(ctx, s.p+"webhooks", tenant).Bytes()
	if errors.Is(err, redis.Nil) {
		return jobs.Webhook{}, false, nil
	}
	if err != nil {
		return jobs.Webhook{}, false, fmt.Errorf("jobs: get webhook of %s: %w", tenant, err)
	}
	var h jobs.Webhook
	if err := json.Unmarshal(b, &h); err != nil {
		return jobs.Webhook{}, false, fmt.Errorf("jobs: webhook of %s: %w", tenant, err)
	}
	return h, true, nil
}

func (s *Store) DeleteWebhook(ctx context.Context, tenant string) error {
	if err := s.rdb.HDel(ctx, s.p+"webhooks", tenant).Err(); err != nil {
		return fmt.Errorf("jobs: delete webhook of %s: %w", tenant, err)
	}
	return nil
}

func (s *Store) ClaimDelivery(ctx context.Context, id int64, keep time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.p+"delivered:"+strconv.FormatInt(id, 10), 1, keep).Result()
	if err != nil {
		return false, fmt.Errorf("jobs: claim delivery of event %d: %w", id, err)
	}
	return ok, nil
}
