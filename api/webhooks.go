package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/jobs"
)

// MinWebhookSecret is the shortest webhook secret accepted (the HMAC key).
const MinWebhookSecret = 16

// WebhookRequest is the body of PUT /v1/webhook.
type WebhookRequest struct {
	URL    string `json:"url"`    // where the job events are POSTed (http or https)
	Secret string `json:"secret"` // the HMAC-SHA256 key of X-Toolhub-Signature; at least 16 characters
}

// WebhookRoutes serves a tenant's webhook, where its jobs' final events
// (the result, or the failure) are POSTed, signed:
//
//	GET    /v1/webhook   {"url": …, "secret_set": true}, or 404 not_found
//	PUT    /v1/webhook   WebhookRequest: register or replace it
//	DELETE /v1/webhook   remove it
//
// check vets the URL with the outbound (SSRF) guard before it is stored;
// deliveries go through the same guard. The tenant is the caller's.
func WebhookRoutes(store jobs.WebhookStore, check func(ctx context.Context, rawURL string) error, maxBody int64) func(mux *http.ServeMux) {
	h := &webhookRoutes{store: store, check: check, maxBody: maxBody}
	return func(mux *http.ServeMux) {
		mux.Handle("GET /v1/webhook", callers(http.HandlerFunc(h.get)))
		mux.Handle("PUT /v1/webhook", callers(http.HandlerFunc(h.put)))
		mux.Handle("DELETE /v1/webhook", callers(http.HandlerFunc(h.del)))
	}
}

type webhookRoutes struct {
	store   jobs.WebhookStore
	check   func(ctx context.Context, rawURL string) error
	maxBody int64
}

func (h *webhookRoutes) get(w http.ResponseWriter, r *http.Request) {
	hook, ok, err := h.store.GetWebhook(r.Context(), TenantFrom(r.Context()))
	if err != nil {
		writeError(w, r, &hub.Error{Code: hub.CodeInternal, Message: "webhook store: try again", Err: err}, "")
		return
	}
	if !ok {
		writeError(w, r, &hub.Error{Code: hub.CodeNotFound, Message: "no webhook registered; PUT /v1/webhook {\"url\": …, \"secret\": …}"}, "")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"url": hook.URL, "secret_set": hook.Secret != ""})
}

func (h *webhookRoutes) put(w http.ResponseWriter, r *http.Request) {
	body, err := readLimited(r.Body, h.maxBody)
	if err != nil {
		writeError(w, r, err, "")
		return
	}
	var req WebhookRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: "body must be {\"url\": \"https://…\", \"secret\": \"…\"}: " + err.Error()}, "")
		return
	}
	if u, err := url.Parse(req.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf("url %q: want an absolute http or https URL", req.URL)}, "")
		return
	}
	if len(req.Secret) < MinWebhookSecret {
		writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf("secret: want at least %d characters (the HMAC key receivers verify X-Toolhub-Signature with)", MinWebhookSecret)}, "")
		return
	}
	if h.check != nil {
		if err := h.check(r.Context(), req.URL); err != nil {
			writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf("url %q is refused by the outbound guard: %v", req.URL, err)}, "")
			return
		}
	}
	if err := h.store.PutWebhook(r.Context(), TenantFrom(r.Context()), jobs.Webhook{URL: req.URL, Secret: req.Secret}); err != nil {
		writeError(w, r, &hub.Error{Code: hub.CodeInternal, Message: "webhook store: try again", Err: err}, "")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"url": req.URL, "secret_set": true})
}

func (h *webhookRoutes) del(w http.ResponseWriter, r *http.Request) {
	if err := h.store.DeleteWebhook(r.Context(), TenantFrom(r.Context())); err != nil {
		writeError(w, r, &hub.Error{Code: hub.CodeInternal, Message: "webhook store: try again", Err: err}, "")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
