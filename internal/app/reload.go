package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/toolhub/toolhub/internal/config"
	"github.com/toolhub/toolhub/internal/vendorlife"
	"github.com/toolhub/toolhub/netguard"
	"github.com/toolhub/toolhub/registry"
)

// ReloadableKeys are the config keys (YAML paths) a reload applies. A
// reload that changes any other key is refused whole, naming the keys
// that need a restart: a reload never reports success for a change it did
// not make. A key added to the config is restart-only until it is listed
// here and applied in [App.Reload].
var ReloadableKeys = []string{
	"vendors", "capabilities", "tenants", "privacy", "cache", "fallback",
	"outbound.allow", "outbound.deny", "billing.budgets", "governance.timeouts",
	"jobs.deadline", "jobs.webhooks", "governance.deadlines", // read at each use (jobs.go, webhooks.go, deadline.go)
}

// ErrReloadRefused is the cause of a reload refused because of what it
// changes (not because the new config is invalid).
var ErrReloadRefused = errors.New("config reload refused")

// restartKeys lists the keys that differ between old and new and that a
// reload does not apply, as YAML paths ("auth", "billing.prices").
func restartKeys(old, new *config.Config) []string {
	var out []string
	var walk func(prefix string, o, n reflect.Value)
	walk = func(prefix string, o, n reflect.Value) {
		t := o.Type()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				name = strings.ToLower(t.Field(i).Name)
			}
			key := prefix + name
			if slices.Contains(ReloadableKeys, key) {
				continue
			}
			of, nf := o.Field(i), n.Field(i)
			if of.Kind() == reflect.Struct && slices.ContainsFunc(ReloadableKeys, func(k string) bool { return strings.HasPrefix(k, key+".") }) {
				walk(key+".", of, nf)
				continue
			}
			if !reflect.DeepEqual(of.Interface(), nf.Interface()) {
				out = append(out, key)
			}
		}
	}
	walk("", reflect.ValueOf(old).Elem(), reflect.ValueOf(new).Elem())
	return out
}

// checkReload refuses a reload that changes keys needing a restart, or
// that drops every tenant the running config declares: with no tenants
// every caller sees every tool, so a truncated or emptied file would open
// the whole catalog to every tenant key.
func checkReload(old, new *config.Config) error {
	if old == nil {
		return nil
	}
	var errs []error
	if keys := restartKeys(old, new); len(keys) > 0 {
		errs = append(errs, fmt.Errorf("%w: %s changed and take effect only after a restart; restart toolhub, or put the old values back to reload the rest (a reload applies %s)",
			ErrReloadRefused, strings.Join(keys, ", "), strings.Join(ReloadableKeys, ", ")))
	}
	if len(old.Tenants) > 0 && len(new.Tenants) == 0 {
		errs = append(errs, fmt.Errorf("%w: the new config declares no tenants (the running one declares %d): with no tenants every caller sees every tool; declare the tenants, or restart toolhub to run without them",
			ErrReloadRefused, len(old.Tenants)))
	}
	return errors.Join(errs...)
}

// reloadOutbound applies a changed outbound policy: checks and dials from
// now on use it, and vendors whose URL it now refuses are reconnected, so
// their open connections are closed and the new connection is refused.
func (a *App) reloadOutbound(ctx context.Context, old, cfg *config.Config) error {
	if old != nil && reflect.DeepEqual(old.Outbound, cfg.Outbound) {
		return nil
	}
	if err := a.Guard.Update(netguard.Options{Allow: cfg.Outbound.Allow, Deny: cfg.Outbound.Deny}); err != nil {
		return fmt.Errorf("outbound: %v", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	specs := a.specs.Load()
	if specs == nil {
		return nil
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(*specs)) {
		v := (*specs)[id]
		u := vendorlife.OutboundURL(v)
		if u == "" || !errors.Is(a.Guard.CheckURL(ctx, u), netguard.ErrRefused) {
			continue
		}
		a.log.Warn("outbound policy changed: disconnecting a vendor whose URL it now refuses", "vendor", id)
		if v.Kind() == registry.KindA2A {
			errs = append(errs, a.A2A.Remove(ctx, id), a.A2A.Add(ctx, v))
		} else {
			errs = append(errs, a.Manager.Remove(ctx, id), a.Manager.Add(ctx, v))
		}
	}
	return errors.Join(errs...)
}
