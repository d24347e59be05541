package backend_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/hub/jobs"
	"github.com/toolhub/toolhub/internal/backend"
	"github.com/toolhub/toolhub/internal/x/pgtest"
	"github.com/toolhub/toolhub/internal/x/redistest"
	"github.com/toolhub/toolhub/registry"
)

// use writes to and reads from the stores that have files or tables.
func use(t *testing.T, s *backend.Stores) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.Registry.ListVendors(ctx); err != nil {
		t.Errorf("registry: %v", err)
	}
	if _, _, err := auth.Issue(ctx, s.Keys, auth.Key{Name: "ops", Role: auth.RoleOperator}, 0); err != nil {
		t.Errorf("keys: %v", err)
	}
	if err := s.Jobs.Add(ctx, &jobs.Job{ID: "j-" + t.Name(), Tenant: "t", Tool: "x", Status: jobs.Queued}); err != nil {
		t.Errorf("jobs: %v", err)
	}
	if err := s.Ledger.Append(ctx, []billing.Event{{Key: billing.CallKey("c1"), CallID: "c1", Kind: billing.KindCall, Time: time.Now(), Tenant: "t", Tool: "x", Outcome: billing.OutcomeOK, Currency: "USD"}}); err != nil {
		t.Errorf("ledger: %v", err)
	}
	if _, err := s.Approvals.List(ctx); err != nil {
		t.Errorf("approvals: %v", err)
	}
	if s.Cache == nil || s.Limiter == nil || s.Budgets == nil || s.Volumes == nil || s.Tasks == nil || s.PushConfigs == nil || s.Audit == nil {
		t.Errorf("a store is nil: %+v", s)
	}
}

// The embedded profile keeps every file where the package doc says, in a
// data folder whose path a file: URI must escape.
func TestEmbedded(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data ?x=1 #y %41")
	s, err := backend.Open(t.Context(), backend.Config{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	use(t, s)
	if s.Profile.State != "embedded" || s.Profile.Records != "embedded" {
		t.Errorf("profile %+v", s.Profile)
	}
	for _, f := range []string{"registry.db", "keys.db", "jobs.db", "ledger.db"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// No other hub writes an embedded registry: it waits for ctx.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.RegistryChanges(ctx, func() { t.Error("a change") }); err != nil {
		t.Error(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if open := openUnder(t, data); len(open) > 0 {
		t.Errorf("open after Close: %v", open)
	}
}

func TestShared(t *testing.T) {
	schema := pgtest.Schema(t)
	prefix := redistest.Prefix(t, redistest.Client(t))
	data := t.TempDir()
	s, err := backend.Open(t.Context(), backend.Config{Data: data, Redis: "redis://" + redistest.Addr() + "/0", RedisPrefix: prefix,
		Postgres: pgtest.DSN(t), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	use(t, s)
	if s.Profile.State != "redis" || s.Profile.Records != "postgres" {
		t.Errorf("profile %+v", s.Profile)
	}
	entries, _ := os.ReadDir(data)
	if len(entries) > 0 {
		t.Errorf("shared stores wrote to the data folder: %v", entries)
	}
	var _ registry.Store = s.Registry
}

// A store that fails to open closes those opened before it.
func TestOpenFailsClosesWhatItOpened(t *testing.T) {
	data := t.TempDir()
	_, err := backend.Open(t.Context(), backend.Config{Data: data, Redis: "bogus://x"})
	if err == nil || !strings.Contains(err.Error(), "redis") {
		t.Fatalf("Open = %v, want a redis error", err)
	}
	if open := openUnder(t, data); len(open) > 0 {
		t.Errorf("open after a failed Open: %v", open)
	}
}

func openUnder(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var out []string
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

// A PostgreSQL or Redis that cannot be reached does not fail Open (issue
// 36): the records answer AwayError until it is joined. A DSN that does
// not parse still fails at once.
func TestOpenWithStoresAway(t *testing.T) {
	data := t.TempDir()
	s, err := backend.Open(t.Context(), backend.Config{Data: data, Redis: "redis://127.0.0.1:1/0",
		Postgres: "postgres://postgres@127.0.0.1:1/test?sslmode=disable", Schema: "toolhub_away"})
	if err != nil {
		t.Fatalf("Open with both stores away: %v", err)
	}
	defer s.Close()
	if _, err := s.Registry.ListVendors(t.Context()); !backend.IsAway(err) {
		t.Errorf("registry while postgres is away: %v, want an AwayError", err)
	}
	if err := s.Ledger.Append(t.Context(), nil); !backend.IsAway(err) {
		t.Errorf("ledger while postgres is away: %v, want an AwayError", err)
	}
	if err := s.Health.Away(); err == nil || !strings.Contains(err.Error(), "postgres") || !strings.Contains(err.Error(), "redis") {
		t.Errorf("Health.Away() = %v, want both named", err)
	}
	for _, bad := range []backend.Config{
		{Data: data, Postgres: "postgres://postgres@127.0.0.1:1/test?sslmode=nonsense"},
		{Data: data, Redis: "http://127.0.0.1:1"},
	} {
		if s, err := backend.Open(t.Context(), bad); err == nil {
			s.Close()
			t.Errorf("Open(%+v) took a bad URL", bad)
		}
	}
}

// A store that takes the connection and never answers (a hung process)
// is away too, once Config.FirstTry has passed.
func TestOpenWithStoresHung(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	addr := ln.Addr().String()
	s, err := backend.Open(t.Context(), backend.Config{Data: t.TempDir(), Redis: "redis://" + addr + "/0",
		Postgres: "postgres://postgres@" + addr + "/test?sslmode=disable", Schema: "toolhub_hung", FirstTry: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open with both stores hung: %v", err)
	}
	defer s.Close()
	if _, err := s.Keys.ListKeys(t.Context()); !backend.IsAway(err) {
		t.Errorf("keys while postgres hangs: %v, want an AwayError", err)
	}
}
