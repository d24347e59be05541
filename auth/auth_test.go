package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/auth/authtest"
)

func TestMemoryStore(t *testing.T) {
	authtest.Run(t, func(t *testing.T) auth.Store { return auth.NewMemoryStore() }, nil)
}

func TestRedact(t *testing.T) {
	tok, _, err := auth.Issue(context.Background(), auth.NewMemoryStore(), auth.Key{Role: auth.RoleOperator}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := auth.Redact("Authorization: Bearer " + tok + " end"); strings.Contains(got, tok) || !strings.Contains(got, "thk_[redacted] end") {
		t.Errorf("Redact = %q", got)
	}
}

// A revoked or expired key is not rotated: a new key would bring it back.
func TestRotateEnded(t *testing.T) {
	ctx := t.Context()
	s := auth.NewMemoryStore()
	_, revoked, err := auth.Issue(ctx, s, auth.Key{Role: auth.RoleTenant, Tenant: "acme"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.Revoke(ctx, s, revoked.ID); err != nil {
		t.Fatal(err)
	}
	_, expired, err := auth.Issue(ctx, s, auth.Key{Role: auth.RoleTenant, Tenant: "acme"}, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{revoked.ID, expired.ID} {
		if tok, _, err := auth.Rotate(ctx, s, id); !errors.Is(err, auth.ErrEnded) || tok != "" {
			t.Errorf("rotating %s: %q, %v; want ErrEnded", id, tok, err)
		}
	}
	_, live, err := auth.Issue(ctx, s, auth.Key{Role: auth.RoleTenant, Tenant: "acme"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if tok, _, err := auth.Rotate(ctx, s, live.ID); err != nil || tok == "" {
		t.Errorf("rotating a live key: %q, %v", tok, err)
	}
}
