// Package authtest is the contract every [auth.Store] passes: the memory
// and SQLite stores in package auth, PostgreSQL in auth/pgkeys.
//
//	func TestContract(t *testing.T) {
//		authtest.Run(t, func(t *testing.T) auth.Store { return open(t) }, nil)
//	}
package authtest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/auth"
)

// Run runs the contract against stores made by newStore, each empty and
// closed when its test ends. reopen, if not nil, opens another store on
// the same keys as s (another hub on one database): what one store
// writes, the other must verify by — at once for a store on its own, and
// within the time the implementation documents for another store (Run
// polls, without asserting a speed).
func Run(t *testing.T, newStore func(t *testing.T) auth.Store, reopen func(t *testing.T, s auth.Store) auth.Store) {
	t.Run("Lifecycle", func(t *testing.T) { lifecycle(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { list(t, newStore(t)) })
	t.Run("Replace", func(t *testing.T) { replace(t, newStore(t)) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, newStore(t)) })
	if reopen != nil {
		t.Run("SharedStores", func(t *testing.T) {
			a := newStore(t)
			shared(t, a, reopen(t, a))
		})
	}
}

// Hash is the SHA-256 a store keeps of a secret, for keys a test writes
// with PutKey.
func Hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

func lifecycle(t *testing.T, s auth.Store) {
	ctx := t.Context()
	tok, k, err := auth.Issue(ctx, s, auth.Key{Name: "orchestrator", Role: auth.RoleTenant, Tenant: "acme"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, secret, _ := strings.Cut(strings.TrimPrefix(tok, "thk_"), "_")
	if secret == "" || strings.Contains(k.SecretHash, secret) {
		t.Fatal("the secret is stored")
	}
	got, err := s.GetKey(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(k, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt is in %v, want UTC", got.CreatedAt.Location())
	}
	p, err := auth.Verify(ctx, s, tok)
	if err != nil || p != (auth.Principal{KeyID: k.ID, Role: auth.RoleTenant, Tenant: "acme"}) {
		t.Fatalf("Verify = %+v, %v", p, err)
	}
	// Wrong secret, unknown id, garbage: all the same error.
	for _, bad := range []string{tok[:len(tok)-1] + "x", "thk_0000000000000000_" + strings.Repeat("a", 43), "Bearer x", ""} {
		if _, err := auth.Verify(ctx, s, bad); !errors.Is(err, auth.ErrInvalidKey) {
			t.Errorf("Verify(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
	// Rotation: the new token works, the old one does not.
	tok2, k2, err := auth.Rotate(ctx, s, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Verify(ctx, s, tok); !errors.Is(err, auth.ErrInvalidKey) {
		t.Errorf("the rotated-out key still works: %v", err)
	}
	if p, err := auth.Verify(ctx, s, tok2); err != nil || p.Tenant != "acme" || k2.ExpiresAt == nil || k2.Name != "orchestrator" {
		t.Errorf("the rotated key: %+v %v %+v", p, err, k2)
	}
	// Revocation and expiry.
	if err := auth.Revoke(ctx, s, k2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Verify(ctx, s, tok2); !errors.Is(err, auth.ErrInvalidKey) {
		t.Errorf("a revoked key works: %v", err)
	}
	if got, err := s.GetKey(ctx, k2.ID); err != nil || got.RevokedAt == nil {
		t.Errorf("the revoked key reads as %+v, %v", got, err)
	}
	past := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	expired := auth.Key{ID: "00000000000000ee", Role: auth.RoleOperator, SecretHash: Hash("s"),
		CreatedAt: past.Add(-time.Hour), ExpiresAt: &past}
	if err := s.PutKey(ctx, expired); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Verify(ctx, s, "thk_00000000000000ee_s"); !errors.Is(err, auth.ErrInvalidKey) {
		t.Errorf("an expired key works: %v", err)
	}
	ks, err := s.ListKeys(ctx)
	if err != nil || len(ks) != 3 {
		t.Errorf("ListKeys = %d keys, %v", len(ks), err)
	}
	if _, err := s.GetKey(ctx, "nope"); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("GetKey(unknown) = %v", err)
	}
	if _, _, err := auth.Issue(ctx, s, auth.Key{Role: auth.RoleVendor}, 0); err == nil {
		t.Error("a vendor key without a vendor was issued")
	}
	if err := s.PutKey(ctx, auth.Key{ID: "00000000000000ef", Role: "root", SecretHash: Hash("s"), CreatedAt: past}); err == nil {
		t.Error("PutKey took a key with an unknown role")
	}
}

// List returns every key, by id, with every field.
func list(t *testing.T, s auth.Store) {
	ctx := t.Context()
	if ks, err := s.ListKeys(ctx); err != nil || len(ks) != 0 {
		t.Fatalf("a new store lists %v, %v", ks, err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	exp := at.Add(24 * time.Hour)
	want := []auth.Key{
		{ID: "0000000000000001", Name: "ops", Role: auth.RoleOperator, SecretHash: Hash("1"), CreatedAt: at},
		{ID: "000000000000000a", Role: auth.RoleVendor, Vendor: "weather-a", SecretHash: Hash("a"), CreatedAt: at, ExpiresAt: &exp},
		{ID: "00000000000000b0", Role: auth.RoleFinance, SecretHash: Hash("b"), CreatedAt: at, ExpiresAt: &exp, RevokedAt: &at},
		{ID: "0000000000000c00", Name: "robot", Role: auth.RoleTenant, Tenant: "acme", SecretHash: Hash("c"), CreatedAt: at},
	}
	for _, i := range []int{2, 0, 3, 1} {
		if err := s.PutKey(ctx, want[i]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListKeys (-want +got):\n%s", diff)
	}
	for _, k := range want {
		got, err := s.GetKey(ctx, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(k, got); diff != "" {
			t.Errorf("GetKey(%s) (-want +got):\n%s", k.ID, diff)
		}
	}
}

// PutKey replaces a key by id: revoking and un-revoking, renaming.
func replace(t *testing.T, s auth.Store) {
	ctx := t.Context()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	k := auth.Key{ID: "00000000000000aa", Role: auth.RoleOperator, SecretHash: Hash("x"), CreatedAt: at}
	if err := s.PutKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	k.Name, k.RevokedAt = "renamed", &at
	if err := s.PutKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Verify(ctx, s, "thk_00000000000000aa_x"); !errors.Is(err, auth.ErrInvalidKey) {
		t.Errorf("a revoked key works: %v", err)
	}
	got, err := s.GetKey(ctx, k.ID)
	if err != nil || got.Name != "renamed" || got.RevokedAt == nil {
		t.Errorf("after a replace: %+v, %v", got, err)
	}
	k.RevokedAt = nil
	if err := s.PutKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Verify(ctx, s, "thk_00000000000000aa_x"); err != nil {
		t.Errorf("a key put back works no more: %v", err)
	}
	if ks, err := s.ListKeys(ctx); err != nil || len(ks) != 1 {
		t.Errorf("ListKeys = %v, %v; want one key", ks, err)
	}
}

// Verifications and revocations at once: a revoked key never verifies
// after Revoke returned.
func concurrent(t *testing.T, s auth.Store) {
	ctx := t.Context()
	const n = 8
	toks := make([]string, n)
	keys := make([]auth.Key, n)
	for i := range n {
		var err error
		toks[i], keys[i], err = auth.Issue(ctx, s, auth.Key{Role: auth.RoleTenant, Tenant: fmt.Sprint("t", i)}, 0)
		if err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for range 20 {
				if _, err := auth.Verify(ctx, s, toks[i]); err != nil {
					t.Errorf("key %d before its revocation: %v", i, err)
					return
				}
			}
			if err := auth.Revoke(ctx, s, keys[i].ID); err != nil {
				t.Error(err)
				return
			}
			if _, err := auth.Verify(ctx, s, toks[i]); !errors.Is(err, auth.ErrInvalidKey) {
				t.Errorf("key %d after its revocation: %v", i, err)
			}
		})
	}
	wg.Wait()
}

// shared: two stores on the same keys. Issued on a is valid on b; revoked
// or rotated on b is refused on a.
func shared(t *testing.T, a, b auth.Store) {
	ctx := t.Context()
	tok, k, err := auth.Issue(ctx, a, auth.Key{Role: auth.RoleTenant, Tenant: "acme"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a key issued on a verifies on b", func() bool { _, err := auth.Verify(ctx, b, tok); return err == nil })
	// a has read the key (and may keep it a while): b revokes it.
	if _, err := auth.Verify(ctx, a, tok); err != nil {
		t.Fatal(err)
	}
	tok2, k2, err := auth.Rotate(ctx, b, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a key rotated out on b is refused on a", func() bool {
		_, err := auth.Verify(ctx, a, tok)
		return errors.Is(err, auth.ErrInvalidKey)
	})
	eventually(t, "the rotated key verifies on a", func() bool { _, err := auth.Verify(ctx, a, tok2); return err == nil })
	if err := auth.Revoke(ctx, b, k2.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a key revoked on b is refused on a", func() bool {
		_, err := auth.Verify(ctx, a, tok2)
		return errors.Is(err, auth.ErrInvalidKey)
	})
	if ks, err := a.ListKeys(ctx); err != nil || len(ks) != 2 {
		t.Errorf("a lists %d keys, %v; want 2", len(ks), err)
	}
}

// eventually polls cond until it holds; it fails the test after 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after 30 s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling an observable condition, not timing a window
	}
}
