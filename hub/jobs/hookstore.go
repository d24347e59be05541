package jobs

import (
	"context"
	"time"
)

// WebhookStore keeps the webhooks tenants register through the API, one
// per tenant, and which events were delivered, so that the instances
// sharing a queue deliver each event once. Both job stores (hub/jobs/sqlitejobs,
// hub/jobs/redisjobs) implement it next to their jobs, and pass one contract
// suite (hub/jobs/jobstest).
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

// Webhooks returns the store's [WebhookStore], or nil when it keeps none.
func (q *Queue) Webhooks() WebhookStore {
	ws, _ := q.store.(WebhookStore)
	return ws
}
