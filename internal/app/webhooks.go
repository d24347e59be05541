package app

import (
	"context"
	"os"
	"time"

	"github.com/toolhub/toolhub/hub/jobs"
)

// startWebhooks pushes each job's final event to its tenant's webhook (the
// one registered with PUT /v1/webhook, else jobs.webhooks), signed, retried
// with backoff, through the outbound guard; the instances sharing a queue
// deliver each event once (WebhookStore.ClaimDelivery).
func (a *App) startWebhooks() {
	store := a.Jobs.Webhooks()
	client := a.Guard.Client(nil)
	client.Timeout = 10 * time.Second
	wh := jobs.NewWebhooks(a.Jobs, jobs.WebhookOptions{
		For:       a.webhookFor,
		Client:    client,
		FinalOnly: true,
		Claim: func(ctx context.Context, id int64) (bool, error) {
			if store == nil {
				return true, nil
			}
			return store.ClaimDelivery(ctx, id, a.Jobs.ResultTTL())
		},
		Logger: a.log,
	})
	go func() {
		if err := wh.Run(a.ctx); err != nil && a.ctx.Err() == nil {
			a.log.Error("jobs: webhook deliveries stopped", "err", err)
		}
	}()
}

// webhookFor is a tenant's webhook: registered through the API, else in
// the config (its secret's ${VAR} read from the environment).
func (a *App) webhookFor(tenant string) (jobs.Webhook, bool) {
	if store := a.Jobs.Webhooks(); store != nil {
		ctx, cancel := context.WithTimeout(a.ctx, 5*time.Second)
		h, ok, err := store.GetWebhook(ctx, tenant)
		cancel()
		if err != nil {
			a.log.Warn("jobs: webhook lookup failed; using the config's", "tenant", tenant, "err", err)
		}
		if ok {
			return h, true
		}
	}
	cfg := a.cfg.Load()
	if cfg == nil {
		return jobs.Webhook{}, false
	}
	for _, h := range cfg.Jobs.Webhooks {
		if h.Tenant == tenant {
			return jobs.Webhook{URL: h.URL, Secret: a.expand(h.Secret)}, true
		}
	}
	return jobs.Webhook{}, false
}

// expand replaces ${VAR} with the environment's value.
func (a *App) expand(s string) string {
	return os.Expand(s, func(k string) string { v, _ := a.opts.LookupEnv(k); return v })
}
