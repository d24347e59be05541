package auth

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func stores(t *testing.T) map[string]func() Store {
	return map[string]func() Store{
		"memory": func() Store { return NewMemoryStore() },
		"sqlite": func() Store {
			s, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "keys.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// TestStoreContract runs every Store through the same cases.
func TestStoreContract(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := newStore()
			tok, k, err := Issue(ctx, s, Key{Name: "orchestrator", Role: RoleTenant, Tenant: "acme"}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(k.SecretHash, tok[len(tokenPrefix)+17:]) {
				t.Fatal("the secret is stored")
			}
			got, err := s.GetKey(ctx, k.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(k, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			p, err := Verify(ctx, s, tok)
			if err != nil || p != (Principal{KeyID: k.ID, Role: RoleTenant, Tenant: "acme"}) {
				t.Fatalf("Verify = %+v, %v", p, err)
			}
			// Wrong secret, unknown id, garbage: all the same error.
			for _, bad := range []string{tok[:len(tok)-1] + "x", "thk_0000000000000000_" + strings.Repeat("a", 43), "Bearer x", ""} {
				if _, err := Verify(ctx, s, bad); !errors.Is(err, ErrInvalidKey) {
					t.Errorf("Verify(%q) = %v, want ErrInvalidKey", bad, err)
				}
			}
			// Rotation: the new token works, the old one does not.
			tok2, k2, err := Rotate(ctx, s, k.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(ctx, s, tok); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("the rotated-out key still works: %v", err)
			}
			if p, err := Verify(ctx, s, tok2); err != nil || p.Tenant != "acme" || k2.ExpiresAt == nil {
				t.Errorf("the rotated key: %+v %v %+v", p, err, k2)
			}
			// Revocation and expiry.
			if err := Revoke(ctx, s, k2.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(ctx, s, tok2); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("a revoked key works: %v", err)
			}
			expired := Key{ID: "00000000000000ee", Role: RoleOperator, SecretHash: hash("s"), CreatedAt: time.Now().Add(-2 * time.Hour)}
			past := time.Now().Add(-time.Hour)
			expired.ExpiresAt = &past
			if err := s.PutKey(ctx, expired); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(ctx, s, "thk_00000000000000ee_s"); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("an expired key works: %v", err)
			}
			ks, err := s.ListKeys(ctx)
			if err != nil || len(ks) != 3 {
				t.Errorf("ListKeys = %d keys, %v", len(ks), err)
			}
			if _, err := s.GetKey(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Errorf("GetKey(unknown) = %v", err)
			}
			if _, _, err := Issue(ctx, s, Key{Role: RoleVendor}, 0); err == nil {
				t.Error("a vendor key without a vendor was issued")
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tok, _, err := Issue(context.Background(), NewMemoryStore(), Key{Role: RoleOperator}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := Redact("Authorization: Bearer " + tok + " end"); strings.Contains(got, tok) || !strings.Contains(got, "thk_[redacted] end") {
		t.Errorf("Redact = %q", got)
	}
}
