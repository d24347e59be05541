package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// WebhookStore keeps the webhooks tenants register through the API, one
// per tenant, and which events were delivered, so that the instances
// sharing a queue deliver each event once. [SQLite] and [Redis] implement
// it next to their jobs, and pass one contract suite.
type WebhookStore interface {
	// PutWebhook registers (or replaces) tenant's webhook.
	PutWebhook(ctx context.Context, tenant string, h Webhook) error
	// GetWebhook returns tenant's webhook; false when it has none.
	GetWebhook(ctx context.Context, tenant string) (Webhook, bool, error)
	// DeleteWebhook removes tenant's webhook (none is no error).
	DeleteWebhook(ctx context.Context, tenant string) error
	// ClaimDelivery reports whether the caller is the first to deliver
	// event id; the claim is kept at least keep.
	ClaimDelivery(ctx context.Context, id int64, keep time.Duration) (bool, error)
}

var (
	_ WebhookStore = (*SQLite)(nil)
	_ WebhookStore = (*Redis)(nil)
)

const sqliteHookSchema = `
CREATE TABLE IF NOT EXISTS webhooks (
	tenant TEXT PRIMARY KEY,
	url    TEXT NOT NULL,
	secret TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
	event_id INTEGER PRIMARY KEY,
	until    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_until ON webhook_deliveries (until);
`

// sqlGetWebhook runs for every final event (prepared at open).
const sqlGetWebhook = `SELECT url, secret FROM webhooks WHERE tenant = ?`

func (s *SQLite) PutWebhook(ctx context.Context, tenant string, h Webhook) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO webhooks (tenant, url, secret) VALUES (?,?,?)
		ON CONFLICT (tenant) DO UPDATE SET url = excluded.url, secret = excluded.secret`, tenant, h.URL, h.Secret)
	if err != nil {
		return fmt.Errorf("jobs: put webhook of %s: %w", tenant, err)
	}
	return nil
}

func (s *SQLite) GetWebhook(ctx context.Context, tenant string) (Webhook, bool, error) {
	var h Webhook
	err := s.stmts[sqlGetWebhook].QueryRowContext(ctx, tenant).Scan(&h.URL, &h.Secret)
	if errors.Is(err, sql.ErrNoRows) {
		return Webhook{}, false, nil
	}
	if err != nil {
		return Webhook{}, false, fmt.Errorf("jobs: get webhook of %s: %w", tenant, err)
	}
	return h, true, nil
}

func (s *SQLite) DeleteWebhook(ctx context.Context, tenant string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM webhooks WHERE tenant = ?`, tenant); err != nil {
		return fmt.Errorf("jobs: delete webhook of %s: %w", tenant, err)
	}
	return nil
}

func (s *SQLite) ClaimDelivery(ctx context.Context, id int64, keep time.Duration) (bool, error) {
	now := s.now()
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE until < ?`, ms(now)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (event_id, until) VALUES (?, ?) ON CONFLICT DO NOTHING`, id, ms(now.Add(keep)))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("jobs: claim delivery of event %d: %w", id, err)
	}
	return n == 1, nil
}

func (s *Redis) PutWebhook(ctx context.Context, tenant string, h Webhook) error {
	b, _ := json.Marshal(h)
	if err := s.rdb.HSet(ctx, s.p+"webhooks", tenant, b).Err(); err != nil {
		return fmt.Errorf("jobs: put webhook of %s: %w", tenant, err)
	}
	return nil
}

func (s *Redis) GetWebhook(ctx context.Context, tenant string) (Webhook, bool, error) {
	b, err := s.rdb.HGet(ctx, s.p+"webhooks", tenant).Bytes()
	if errors.Is(err, redis.Nil) {
		return Webhook{}, false, nil
	}
	if err != nil {
		return Webhook{}, false, fmt.Errorf("jobs: get webhook of %s: %w", tenant, err)
	}
	var h Webhook
	if err := json.Unmarshal(b, &h); err != nil {
		return Webhook{}, false, fmt.Errorf("jobs: webhook of %s: %w", tenant, err)
	}
	return h, true, nil
}

func (s *Redis) DeleteWebhook(ctx context.Context, tenant string) error {
	if err := s.rdb.HDel(ctx, s.p+"webhooks", tenant).Err(); err != nil {
		return fmt.Errorf("jobs: delete webhook of %s: %w", tenant, err)
	}
	return nil
}

func (s *Redis) ClaimDelivery(ctx context.Context, id int64, keep time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.p+"delivered:"+strconv.FormatInt(id, 10), 1, keep).Result()
	if err != nil {
		return false, fmt.Errorf("jobs: claim delivery of event %d: %w", id, err)
	}
	return ok, nil
}

// Webhooks returns the store's [WebhookStore], or nil when it keeps none.
func (q *Queue) Webhooks() WebhookStore {
	ws, _ := q.store.(WebhookStore)
	return ws
}
