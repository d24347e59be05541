package auth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/auth/authtest"
)

func TestMemoryStore(t *testing.T) {
	authtest.Run(t, func(t *testing.T) auth.Store { return auth.NewMemoryStore() }, nil)
}

func TestSQLiteStore(t *testing.T) {
	open := func(t *testing.T, path string) auth.Store {
		s, err := auth.OpenSQLite(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the store's file is not at %q: %v", path, err)
		}
		return s
	}
	paths := map[auth.Store]string{}
	authtest.Run(t,
		func(t *testing.T) auth.Store {
			// A data folder whose path a file: URI must escape.
			p := filepath.Join(awkwardDir(t), "keys.db")
			s := open(t, p)
			paths[s] = p
			return s
		},
		// Two hubs on one data folder (or `toolhub keys` beside a hub).
		func(t *testing.T, s auth.Store) auth.Store { return open(t, paths[s]) },
	)
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

// awkwardDir is a data folder whose path holds '?', '#', '%' and spaces.
func awkwardDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data ?x=1 #frag %41")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	return dir
}
