package pgkeys_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/auth/authtest"
	"github.com/toolhub/toolhub/auth/pgkeys"
	"github.com/toolhub/toolhub/internal/x/pgtest"
)

var quiet = slog.New(slog.DiscardHandler)

func open(t testing.TB, schema string, ttl time.Duration) *pgkeys.Store {
	t.Helper()
	s, err := pgkeys.Open(context.Background(), pgtest.DSN(t), &pgkeys.Options{Schema: schema, MaxConns: 4, CacheTTL: ttl, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitListening waits until s uses its cache (so the tests below run the
// cached path, not only the reads).
func waitListening(t testing.TB, s *pgkeys.Store) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !s.Listening() {
		if time.Now().After(deadline) {
			t.Fatal("the store is not listening after 30 s")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
}

func TestContract(t *testing.T) {
	for _, tt := range []struct {
		name string
		ttl  time.Duration
	}{{"cached", 0}, {"uncached", -1}} {
		t.Run(tt.name, func(t *testing.T) {
			authtest.Run(t,
				func(t *testing.T) auth.Store {
					s := open(t, pgtest.Schema(t), tt.ttl)
					if tt.ttl >= 0 {
						waitListening(t, s)
					}
					return s
				},
				func(t *testing.T, s auth.Store) auth.Store {
					o := open(t, s.(*pgkeys.Store).Schema(), tt.ttl)
					if tt.ttl >= 0 {
						waitListening(t, o)
					}
					return o
				})
		})
	}
}

// With the cache off, a revocation on one hub is refused on the next
// request to another: no waiting at all.
func TestUncachedRevocationIsImmediate(t *testing.T) {
	schema := pgtest.Schema(t)
	a, b := open(t, schema, -1), open(t, schema, -1)
	ctx := t.Context()
	tok, k, err := auth.Issue(ctx, a, auth.Key{Role: auth.RoleOperator}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Verify(ctx, b, tok); err != nil {
		t.Fatal(err)
	}
	if err := auth.Revoke(ctx, a, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Verify(ctx, b, tok); err == nil {
		t.Fatal("a key revoked on a still works on b")
	}
}

// A cached key stays cached only as long as the TTL.
func TestCacheTTL(t *testing.T) {
	schema := pgtest.Schema(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ctx := t.Context()
	// Issued before a listens, so that no notification of it reaches a.
	tok, k, err := auth.Issue(ctx, open(t, schema, -1), auth.Key{Role: auth.RoleOperator}, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := pgkeys.Open(t.Context(), pgtest.DSN(t), &pgkeys.Options{Schema: schema, CacheTTL: time.Minute, Now: clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	waitListening(t, a)
	if _, err := auth.Verify(ctx, a, tok); err != nil { // cached now
		t.Fatal(err)
	}
	// Change the row behind every store's back (no notification).
	if err := revokeSilently(t, schema, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Verify(ctx, a, tok); err != nil {
		t.Fatalf("within its TTL the cached key was read again: %v", err)
	}
	now = now.Add(time.Minute)
	if _, err := auth.Verify(ctx, a, tok); err == nil {
		t.Fatal("past its TTL the cached key was not read again")
	}
}

// The listener's connection dies: the store reads through, forgets what it
// cached, and listens again.
func TestListenerReconnects(t *testing.T) {
	schema := pgtest.Schema(t)
	app := "pgkeys_test_" + schema
	a, err := pgkeys.Open(t.Context(), pgtest.WithAppName(t, pgtest.DSN(t), app), &pgkeys.Options{Schema: schema, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	waitListening(t, a)
	ctx := t.Context()
	tok, k, err := auth.Issue(ctx, a, auth.Key{Role: auth.RoleOperator}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Verify(ctx, a, tok); err != nil {
		t.Fatal(err)
	}
	if err := exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'`, app); err != nil {
		t.Fatal(err)
	}
	// Revoked without a notification while a may or may not have noticed:
	// either it reads through, or it forgot its cache when it listened again.
	if err := revokeSilently(t, schema, k.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := auth.Verify(ctx, a, tok)
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the key revoked while the listener was down still works after 30 s")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
	waitListening(t, a)
}

// The database goes away: keys read before still verify (for
// StaleIfError), keys never read do not; when it is back, it is read again.
func TestStaleIfError(t *testing.T) {
	schema := pgtest.Schema(t)
	cfg, err := pgx.ParseConfig(pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	dsn := (&url.URL{Scheme: "postgres", User: url.UserPassword(cfg.User, cfg.Password), Host: p.addr, Path: "/" + cfg.Database,
		RawQuery: "sslmode=disable&connect_timeout=2"}).String()
	// Issued before a listens, so that no notification of them reaches a
	// (one would make it forget the key it just read).
	ctx := t.Context()
	issuer := open(t, schema, -1)
	tok, _, err := auth.Issue(ctx, issuer, auth.Key{Role: auth.RoleOperator}, 0)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := auth.Issue(ctx, issuer, auth.Key{Role: auth.RoleOperator}, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := pgkeys.Open(t.Context(), dsn, &pgkeys.Options{Schema: schema, StaleIfError: time.Minute, Now: clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	waitListening(t, a)
	if _, err := auth.Verify(ctx, a, tok); err != nil {
		t.Fatal(err)
	}

	p.cut()
	deadline := time.Now().Add(30 * time.Second)
	for a.Listening() {
		if time.Now().After(deadline) {
			t.Fatal("still listening 30 s after the database went away")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
	advance(30 * time.Second) // past the cache TTL, within StaleIfError
	if _, err := auth.Verify(ctx, a, tok); err != nil {
		t.Errorf("a key read before the outage, during it: %v", err)
	}
	if _, err := auth.Verify(ctx, a, other); err == nil {
		t.Error("a key never read verified during the outage")
	}
	advance(time.Minute)
	if _, err := auth.Verify(ctx, a, tok); err == nil {
		t.Error("a key read before the outage still verifies past StaleIfError")
	}

	p.restore()
	if _, err := auth.Verify(ctx, a, other); err != nil {
		t.Errorf("after the outage: %v", err)
	}
}

// proxy forwards TCP connections to a target until cut.
type proxy struct {
	addr   string
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.down {
				p.mu.Unlock()
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

// cut closes every connection and refuses new ones.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}
