// Package pgtest connects tests to the machine's real PostgreSQL
// (postgres://postgres@127.0.0.1:5432/test, or $TOOLHUB_TEST_POSTGRES),
// each test in a schema of its own.
//
//	dsn := pgtest.DSN(t)       // the database; fails the test if it is down
//	schema := pgtest.Schema(t) // unique; dropped (CASCADE) when t ends
//	s, err := pgstore.Open(t.Context(), dsn, &pgstore.Options{Schema: schema})
//
// A PostgreSQL that cannot be reached fails the test: `make test` starts
// one, so a skip would only hide a broken setup. TOOLHUB_SKIP_PG=1 skips
// instead (TOOLHUB_SKIP_POSTGRES=1, the older name, too).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultDSN is the database the tests use without $TOOLHUB_TEST_POSTGRES.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// ConnString is the test database's connection string, unchecked (like
// redistest.Addr); tests call [DSN], which fails them when it is down.
func ConnString() string {
	if d := os.Getenv("TOOLHUB_TEST_POSTGRES"); d != "" {
		return d
	}
	return DefaultDSN
}

// reachable remembers the first check: a database that answered once is
// not asked again by every test.
var reachable = sync.OnceValue(func() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ConnString())
	if err != nil {
		return err
	}
	return conn.Close(ctx)
})

// DSN returns the test database's connection string. It fails t when the
// database cannot be reached (skips it with TOOLHUB_SKIP_PG=1).
func DSN(t testing.TB) string {
	t.Helper()
	if err := reachable(); err != nil {
		msg := fmt.Sprintf("postgresql is not reachable (%v): run `make services`, set TOOLHUB_TEST_POSTGRES, or set TOOLHUB_SKIP_PG=1 to skip", err)
		if os.Getenv("TOOLHUB_SKIP_PG") == "1" || os.Getenv("TOOLHUB_SKIP_POSTGRES") == "1" {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	return ConnString()
}

// Schema names a schema for t alone and drops it, with everything in it,
// when t ends. Cleanups run last-in first-out, so stores a test opens
// after calling Schema are closed before the schema is dropped. The
// schema itself is not created: stores create theirs.
func Schema(t testing.TB) string {
	t.Helper()
	d := DSN(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "toolhub_test_" + hex.EncodeToString(b)
	t.Cleanup(func() { Drop(t, d, schema) })
	return schema
}

// WithAppName returns dsn (a URL or key=value string) with
// application_name set, so a test can find its connections in
// pg_stat_activity.
func WithAppName(t testing.TB, dsn, name string) string {
	t.Helper()
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " application_name=" + name
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("TOOLHUB_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// Drop drops schema (if it exists) with everything in it.
func Drop(t testing.TB, dsn, schema string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
}
