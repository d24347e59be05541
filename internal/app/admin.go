package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/vendorlife"
	"github.com/toolhub/toolhub/registry"
)

var _ api.Admin = (*App)(nil)

func badRequest(format string, args ...any) error {
	return &hub.Error{Code: hub.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// newVendorLife wires the vendor lifecycle (internal/vendorlife) to this
// hub's stores, config, audit log and apply step.
func (a *App) newVendorLife() *vendorlife.Lifecycle {
	return vendorlife.New(&vendorlife.Options{
		Store:     a.Store,
		Approvals: a.approvals,
		Catalog:   a.Catalog,
		Guard:     a.Guard,
		Pins:      a.pins,
		Declared: func(id string) bool {
			return slices.ContainsFunc(a.cfg.Load().Vendors, func(v registry.Vendor) bool { return v.ID == id })
		},
		AllowStdio: func() bool { return a.cfg.Load().Admin.AllowStdioVendors },
		Apply:      a.applyStored,
		Audit:      a.audit,
		Logger:     a.log,
		LookupEnv:  a.opts.LookupEnv,
	})
}

// applyStored re-applies the config with the stored vendors.
func (a *App) applyStored(ctx context.Context) error {
	return a.apply(ctx, a.cfg.Load())
}

// The vendor half of [api.Admin]: see package vendorlife.

func (a *App) RegisterVendor(ctx context.Context, spec registry.Vendor, create bool) (api.VendorChange, error) {
	return a.life.Register(ctx, spec, create)
}

func (a *App) RemoveVendor(ctx context.Context, id string) error { return a.life.Remove(ctx, id) }

func (a *App) VendorVersions(ctx context.Context, id string) ([]registry.VendorRecord, error) {
	return a.life.Versions(ctx, id)
}

func (a *App) RollbackVendor(ctx context.Context, id string, version int64) (api.VendorChange, error) {
	return a.life.Rollback(ctx, id, version)
}

func (a *App) PendingVendors(ctx context.Context) ([]api.VendorChange, error) {
	return a.life.Pending(ctx)
}

func (a *App) DecideVendor(ctx context.Context, id string, approve bool) (api.VendorChange, error) {
	return a.life.Decide(ctx, id, approve)
}

func (a *App) IssueKey(ctx context.Context, req api.KeyRequest) (string, auth.Key, error) {
	ttl, err := api.ParseTTL(req.TTL)
	if err != nil {
		return "", auth.Key{}, err
	}
	tok, k, err := auth.Issue(ctx, a.Keys, auth.Key{Role: req.Role, Tenant: req.Tenant, Vendor: req.Vendor, Name: req.Name}, ttl)
	if err != nil {
		return "", auth.Key{}, badRequest("%v", err)
	}
	a.audit(ctx, "key.issue", k.ID, nil, k)
	return tok, k, nil
}

func (a *App) ListKeys(ctx context.Context) ([]auth.Key, error) { return a.Keys.ListKeys(ctx) }

func (a *App) RotateKey(ctx context.Context, id string) (string, auth.Key, error) {
	tok, k, err := auth.Rotate(ctx, a.Keys, id)
	if errors.Is(err, auth.ErrNotFound) {
		return "", auth.Key{}, badRequest("no key %q", id)
	}
	if errors.Is(err, auth.ErrEnded) {
		return "", auth.Key{}, badRequest("%v", err)
	}
	if err == nil {
		a.audit(ctx, "key.rotate", id, nil, k)
	}
	return tok, k, err
}

func (a *App) RevokeKey(ctx context.Context, id string) error {
	err := auth.Revoke(ctx, a.Keys, id)
	if errors.Is(err, auth.ErrNotFound) {
		return badRequest("no key %q", id)
	}
	if err == nil {
		a.audit(ctx, "key.revoke", id, nil, nil)
	}
	return err
}

// Audit returns the newest n audit entries, oldest first
// (DefaultAuditEntries when n <= 0), from the log every hub sharing the
// database writes to.
func (a *App) Audit(ctx context.Context, n int) (any, error) {
	if n <= 0 {
		n = DefaultAuditEntries
	}
	return a.auditLog.Recent(ctx, n)
}
