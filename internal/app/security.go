package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/audit"
	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/internal/backend"
	"github.com/toolhub/toolhub/internal/config"
)

// authenticate verifies the request's API key: "Authorization: Bearer
// <key>" or "X-Api-Key: <key>".
func (a *App) authenticate(r *http.Request) (auth.Principal, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		tok = r.Header.Get("X-Api-Key")
	}
	if tok == "" {
		return auth.Principal{}, errors.New("missing API key: send Authorization: Bearer <key>")
	}
	if p, ok, err := a.verifyToken(r, strings.TrimSpace(tok)); ok {
		return p, err // an OAuth access token (oauth.go)
	}
	p, err := auth.Verify(r.Context(), a.Keys, strings.TrimSpace(tok))
	if err != nil {
		return auth.Principal{}, errors.New("invalid, expired or revoked API key")
	}
	return p, nil
}

// privacy holds the compiled redaction rules.
type privacy struct {
	rules map[string]*regexp.Regexp
}

func newPrivacy(cfg *config.Config) (*privacy, error) {
	rules, err := cfg.Privacy.RedactionRules()
	if err != nil {
		return nil, err
	}
	return &privacy{rules: rules}, nil
}

func (a *App) maxDataLevel(vendor string) int {
	v, _ := a.spec(vendor)
	return v.MaxDataLevel
}

func (a *App) tenantDataLevel(tenant string) int {
	if m := a.tenants.Load(); m != nil {
		if t, ok := (*m)[tenant]; ok {
			return t.DataLevel
		}
	}
	return 0
}

// redact masks, in every string argument going to vendor, what the
// vendor's redaction rules match. Vendors without rules get args as is.
func (a *App) redact(vendor string, args map[string]any) map[string]any {
	v, _ := a.spec(vendor)
	if len(v.Redact) == 0 {
		return args
	}
	p := a.privacy.Load()
	var res []*regexp.Regexp
	var names []string
	for _, n := range v.Redact {
		if re := p.rules[n]; re != nil {
			res, names = append(res, re), append(names, n)
		}
	}
	var walk func(x any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case string:
			for i, re := range res {
				t = re.ReplaceAllString(t, "[redacted:"+names[i]+"]")
			}
			return t
		case map[string]any:
			m := make(map[string]any, len(t))
			for k, e := range t {
				m[k] = walk(e)
			}
			return m
		case []any:
			s := make([]any, len(t))
			for i, e := range t {
				s[i] = walk(e)
			}
			return s
		}
		return x
	}
	return walk(args).(map[string]any)
}

// AuditEntry is one entry of the audit log: who changed what, when, and
// the state before and after.
type AuditEntry = audit.Entry

// DefaultAuditEntries is how many of the newest audit entries
// GET /v1/admin/audit returns without ?n=.
const DefaultAuditEntries = 1000

// OpenKeys opens the API key store of cfg (internal/backend): PostgreSQL
// (shared by every hub on the database) when postgres is set, else
// data/keys.db. The `toolhub keys` command uses it too, so it works on the
// keys the hubs use.
func OpenKeys(ctx context.Context, cfg *config.Config) (auth.Store, error) {
	return backend.OpenKeys(ctx, storesConfig(cfg, slog.Default()))
}

func (a *App) audit(ctx context.Context, action, target string, before, after any) {
	e := AuditEntry{At: time.Now().UTC(), Who: api.PrincipalFrom(ctx), Action: action, Target: target}
	if before != nil {
		e.Before, _ = json.Marshal(before)
	}
	if after != nil {
		e.After, _ = json.Marshal(after)
	}
	// The entry outlives the request: a caller that hangs up does not
	// unwrite what it changed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := a.auditLog.Append(ctx, e); err != nil {
		a.log.Error("audit log write failed", "err", err, "action", action, "target", target)
	}
}
