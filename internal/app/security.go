package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/api"
	"github.com/toolhub/toolhub/auth"
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

// AuditEntry is one line of the audit log: who changed what, when, and
// the state before and after.
type AuditEntry struct {
	At     time.Time       `json:"at"`
	Who    auth.Principal  `json:"who"`
	Action string          `json:"action"` // vendor.register, vendor.update, vendor.remove, vendor.rollback, vendor.approve, vendor.reject, key.issue, key.rotate, key.revoke
	Target string          `json:"target"`
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// auditLog appends entries to a JSON-lines file, fsynced per entry.
type auditLog struct {
	mu   sync.Mutex
	path string
}

func (l *auditLog) append(e AuditEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %v", err)
	}
	defer f.Close()
	b, _ := json.Marshal(e)
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("audit: %v", err)
	}
	return f.Sync()
}

// read returns the newest n entries (all when n <= 0), oldest first.
func (l *auditLog) read(n int) ([]AuditEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.Open(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e AuditEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, sc.Err()
}

func (a *App) audit(ctx context.Context, action, target string, before, after any) {
	e := AuditEntry{At: time.Now().UTC(), Who: api.PrincipalFrom(ctx), Action: action, Target: target}
	if before != nil {
		e.Before, _ = json.Marshal(before)
	}
	if after != nil {
		e.After, _ = json.Marshal(after)
	}
	if err := a.auditLog.append(e); err != nil {
		a.log.Error("audit log write failed", "err", err, "action", action, "target", target)
	}
}

func auditPath(cfg *config.Config) string { return filepath.Join(cfg.Data, "audit.jsonl") }
