package sqlitejobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/hub/jobs/internal/jobrow"
)

var _ jobs.WebhookStore = (*Store)(nil)

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

func (s *Store) PutWebhook(ctx context.Context, tenant string, h jobs.Webhook) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO webhooks (tenant, url, secret) VALUES (?,?,?)
		ON CONFLICT (tenant) DO UPDATE SET url = excluded.url, secret = excluded.secret`, tenant, h.URL, h.Secret)
	if err != nil {
		return fmt.Errorf("jobs: put webhook of %s: %w", tenant, err)
	}
	return nil
}

func (s *Store) GetWebhook(ctx context.Context, tenant string) (jobs.Webhook, bool, error) {
	var h jobs.Webhook
	err := s.stmts[sqlGetWebhook].QueryRowContext(ctx, tenant).Scan(&h.URL, &h.Secret)
	if errors.Is(err, sql.ErrNoRows) {
		return jobs.Webhook{}, false, nil
	}
	if err != nil {
		return jobs.Webhook{}, false, fmt.Errorf("jobs: get webhook of %s: %w", tenant, err)
	}
	return h, true, nil
}

func (s *Store) DeleteWebhook(ctx context.Context, tenant string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM webhooks WHERE tenant = ?`, tenant); err != nil {
		return fmt.Errorf("jobs: delete webhook of %s: %w", tenant, err)
	}
	return nil
}

func (s *Store) ClaimDelivery(ctx context.Context, id int64, keep time.Duration) (bool, error) {
	now := s.now()
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE until < ?`, jobrow.MS(now)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (event_id, until) VALUES (?, ?) ON CONFLICT DO NOTHING`, id, jobrow.MS(now.Add(keep)))
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
