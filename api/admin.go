package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// VendorChange is the outcome of a vendor registration or update.
type VendorChange struct {
	Vendor   string   `json:"vendor"`
	Version  int64    `json:"version,omitempty"`
	Status   string   `json:"status"`             // live, pending_approval, rejected, removed
	Breaking []string `json:"breaking,omitempty"` // why an operator must approve
	Tools    []string `json:"tools,omitempty"`    // the tools the vendor serves
	Rejected []string `json:"rejected,omitempty"` // tools left out, with why
	// Held are versions of the vendor's tools that differ from their pins
	// (pending changes only): field by field, old → new, with the changed
	// words. The pinned versions serve until an operator approves.
	Held []registry.HeldTool `json:"held,omitempty"`
	// Pending changes only (GET /v1/admin/vendors/pending): who submitted
	// the change and when.
	SubmittedBy *auth.Principal `json:"submitted_by,omitempty"`
	SubmittedAt *time.Time      `json:"submitted_at,omitempty"`
}

// KeyRequest asks for a new API key.
type KeyRequest struct {
	Role   string `json:"role"`
	Tenant string `json:"tenant,omitempty"`
	Vendor string `json:"vendor,omitempty"`
	Name   string `json:"name,omitempty"`
	TTL    string `json:"ttl,omitempty"` // e.g. "720h"; empty: no expiry
}

// Admin is what the self-service and operator routes act on; the app
// implements it. Every method reads the principal from ctx and refuses
// what it may not do (a vendor key touches only its own vendor).
type Admin interface {
	RegisterVendor(ctx context.Context, spec registry.Vendor, create bool) (VendorChange, error)
	RemoveVendor(ctx context.Context, id string) error
	VendorVersions(ctx context.Context, id string) ([]registry.VendorRecord, error)
	RollbackVendor(ctx context.Context, id string, version int64) (VendorChange, error)
	PendingVendors(ctx context.Context) ([]VendorChange, error)
	DecideVendor(ctx context.Context, id string, approve bool) (VendorChange, error)
	IssueKey(ctx context.Context, req KeyRequest) (string, auth.Key, error)
	ListKeys(ctx context.Context) ([]auth.Key, error)
	RotateKey(ctx context.Context, id string) (string, auth.Key, error)
	RevokeKey(ctx context.Context, id string) error
	Audit(ctx context.Context, n int) (any, error)
}

// AdminRoutes mounts vendor self-service (vendor or operator keys) and the
// operator routes (keys, approvals, audit log).
func AdminRoutes(ad Admin, maxBody int64) func(*http.ServeMux) {
	a := &adminRoutes{ad: ad, maxBody: maxBody}
	return func(mux *http.ServeMux) {
		a.vendorRoutes(mux)
		a.approvalRoutes(mux)
		a.keyRoutes(mux)
		mux.Handle("GET /v1/admin/audit", operatorOnly(func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			v, err := ad.Audit(r.Context(), n)
			answerAdmin(w, r, map[string]any{"entries": v}, err)
		}))
	}
}

// adminRoutes are the handlers of [AdminRoutes].
type adminRoutes struct {
	ad      Admin
	maxBody int64
}

func vendorOrOperator(h http.HandlerFunc) http.Handler {
	return Require(h, auth.RoleVendor, auth.RoleOperator)
}

func operatorOnly(h http.HandlerFunc) http.Handler { return Require(h, auth.RoleOperator) }

// decode reads the request's JSON body (bounded; no unknown fields) into
// v; it writes the error and reports false for a bad one.
func (a *adminRoutes) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := readLimited(r.Body, a.maxBody)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err = dec.Decode(v); err != nil {
			err = &hub.Error{Code: hub.CodeInvalidRequest, Message: "body: " + err.Error()}
		}
	}
	if err != nil {
		writeError(w, r, err, "")
		return false
	}
	return true
}

// answerAdmin writes v, or err; a vendor change waiting for approval is 202.
func answerAdmin(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		writeError(w, r, err, "")
		return
	}
	status := http.StatusOK
	if c, ok := v.(VendorChange); ok && c.Status == "pending_approval" {
		status = http.StatusAccepted
	}
	writeJSON(w, status, v)
}

// register creates (POST) or updates (PUT) the vendor of the path.
func (a *adminRoutes) register(create bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var spec registry.Vendor
		if !a.decode(w, r, &spec) {
			return
		}
		if spec.ID == "" {
			spec.ID = r.PathValue("id")
		}
		if spec.ID != r.PathValue("id") {
			writeError(w, r, &hub.Error{Code: hub.CodeInvalidRequest, Message: "the body's id differs from the path's"}, "")
			return
		}
		c, err := a.ad.RegisterVendor(r.Context(), spec, create)
		answerAdmin(w, r, c, err)
	}
}

// vendorRoutes are vendor self-service: register, update, remove, list
// versions, roll back.
func (a *adminRoutes) vendorRoutes(mux *http.ServeMux) {
	ad := a.ad
	mux.Handle("POST /v1/vendors/{id}", vendorOrOperator(a.register(true)))
	mux.Handle("PUT /v1/vendors/{id}", vendorOrOperator(a.register(false)))
	mux.Handle("DELETE /v1/vendors/{id}", vendorOrOperator(func(w http.ResponseWriter, r *http.Request) {
		err := ad.RemoveVendor(r.Context(), r.PathValue("id"))
		answerAdmin(w, r, VendorChange{Vendor: r.PathValue("id"), Status: "removed"}, err)
	}))
	mux.Handle("GET /v1/vendors/{id}/versions", vendorOrOperator(func(w http.ResponseWriter, r *http.Request) {
		v, err := ad.VendorVersions(r.Context(), r.PathValue("id"))
		answerAdmin(w, r, map[string]any{"versions": v}, err)
	}))
	mux.Handle("POST /v1/vendors/{id}/rollback", vendorOrOperator(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Version int64 `json:"version"`
		}
		if !a.decode(w, r, &req) {
			return
		}
		c, err := ad.RollbackVendor(r.Context(), r.PathValue("id"), req.Version)
		answerAdmin(w, r, c, err)
	}))
}

// approvalRoutes are the operator's queue of vendor changes.
func (a *adminRoutes) approvalRoutes(mux *http.ServeMux) {
	ad := a.ad
	mux.Handle("GET /v1/admin/vendors/pending", operatorOnly(func(w http.ResponseWriter, r *http.Request) {
		p, err := ad.PendingVendors(r.Context())
		answerAdmin(w, r, map[string]any{"pending": p}, err)
	}))
	for _, d := range []struct {
		path    string
		approve bool
	}{{"approve", true}, {"reject", false}} {
		mux.Handle("POST /v1/admin/vendors/{id}/"+d.path, operatorOnly(func(w http.ResponseWriter, r *http.Request) {
			c, err := ad.DecideVendor(r.Context(), r.PathValue("id"), d.approve)
			answerAdmin(w, r, c, err)
		}))
	}
}

// keyRoutes issue, list, rotate and revoke API keys.
func (a *adminRoutes) keyRoutes(mux *http.ServeMux) {
	ad := a.ad
	mux.Handle("POST /v1/admin/keys", operatorOnly(func(w http.ResponseWriter, r *http.Request) {
		var req KeyRequest
		if !a.decode(w, r, &req) {
			return
		}
		tok, k, err := ad.IssueKey(r.Context(), req)
		answerAdmin(w, r, map[string]any{"key": k, "token": tok, "note": "the token is shown once; store it now"}, err)
	}))
	mux.Handle("GET /v1/admin/keys", operatorOnly(func(w http.ResponseWriter, r *http.Request) {
		ks, err := ad.ListKeys(r.Context())
		answerAdmin(w, r, map[string]any{"keys": ks}, err)
	}))
	mux.Handle("POST /v1/admin/keys/{id}/rotate", operatorOnly(func(w http.ResponseWriter, r *http.Request) {
		tok, k, err := ad.RotateKey(r.Context(), r.PathValue("id"))
		answerAdmin(w, r, map[string]any{"key": k, "token": tok, "note": "the token is shown once; the old key is revoked"}, err)
	}))
	mux.Handle("DELETE /v1/admin/keys/{id}", operatorOnly(func(w http.ResponseWriter, r *http.Request) {
		err := ad.RevokeKey(r.Context(), r.PathValue("id"))
		answerAdmin(w, r, map[string]any{"revoked": r.PathValue("id")}, err)
	}))
}

// ParseTTL parses a key lifetime ("720h"; "" means none).
func ParseTTL(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, &hub.Error{Code: hub.CodeInvalidRequest, Message: "ttl " + strconv.Quote(s) + ": want a duration like \"720h\""}
	}
	return d, nil
}
