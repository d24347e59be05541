package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolhub/toolhub/internal/x/pgtest"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/pgstore"
	"github.com/toolhub/toolhub/registry/registrytest"
)

// testDSN is the database the tests use (see internal/x/pgtest).
func testDSN() string { return pgtest.ConnString() }

// withAppName returns dsn (URL or key=value form) with application_name
// set, so a test can find its store's connections in pg_stat_activity.
func withAppName(t testing.TB, dsn, name string) string {
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

// uniqueName returns prefix followed by random hex: schemas, vendor ids and
// application names no other test (or test run) uses.
func uniqueName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// requirePostgres fails the test when the database cannot be reached, or
// skips it with TOOLHUB_SKIP_PG=1.
func requirePostgres(t testing.TB) {
	t.Helper()
	pgtest.DSN(t)
}

// newSchema names a schema for this test alone and drops it when the test
// ends (after the test's stores are closed: cleanups run last-in first-out).
func newSchema(t testing.TB) string {
	t.Helper()
	return pgtest.Schema(t)
}

var quiet = slog.New(slog.DiscardHandler)

// open opens a Store on schema (see newSchema), closed when the test ends.
func open(t testing.TB, dsn, schema string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), dsn, &pgstore.Options{Schema: schema, MaxConns: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	requirePostgres(t)
	registrytest.RunStoreContract(t,
		func(t *testing.T) registry.Store { return open(t, testDSN(), newSchema(t)) },
		func(t *testing.T, s registry.Store) registry.Store {
			return open(t, testDSN(), s.(*pgstore.Store).Schema())
		},
	)
}

func TestSchemasAreSeparate(t *testing.T) {
	a := open(t, testDSN(), newSchema(t))
	b := open(t, testDSN(), newSchema(t))
	v := registrytest.Vendors()[0]
	if _, err := a.PutVendor(t.Context(), v, 0, "t"); err != nil {
		t.Fatal(err)
	}
	if list, err := b.ListVendors(t.Context()); err != nil || len(list) != 0 {
		t.Errorf("another schema's store lists %v (err %v), want nothing", list, err)
	}
	if _, err := b.PutVendor(t.Context(), v, 0, "t"); err != nil {
		t.Errorf("another schema's store: PutVendor(expect 0): %v", err)
	}
}

func TestDefaultSchema(t *testing.T) {
	s, err := pgstore.Open(t.Context(), "postgres://nobody@127.0.0.1:1/none", &pgstore.Options{Logger: quiet})
	if err == nil {
		s.Close()
		t.Fatal("Open of an unreachable database succeeded")
	}
	if want := `pgstore: open 127.0.0.1:1/none schema "toolhub": `; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
}

func TestOpenRefuses(t *testing.T) {
	long := strings.Repeat("s", 64)
	tests := []struct {
		name, dsn, schema string
		want              string // the error starts with this
		notWant           string
	}{
		{"unreachable", "postgres://nobody:secret@127.0.0.1:1/none?connect_timeout=5", "x", `pgstore: open 127.0.0.1:1/none schema "x": `, "secret"},
		{"bad dsn", "postgres://nobody:secret@127.0.0.1:port/none", "x", `pgstore: open: `, "secret"},
		{"schema name too long", testDSN(), long, `pgstore: open `, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := pgstore.Open(t.Context(), tt.dsn, &pgstore.Options{Schema: tt.schema, Logger: quiet})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q does not start with %q", err, tt.want)
			}
			if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	schema := newSchema(t)
	s := open(t, testDSN(), schema)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), testDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `UPDATE `+pgx.Identifier{schema}.Sanitize()+`.schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	_, err = pgstore.Open(t.Context(), testDSN(), &pgstore.Options{Schema: schema, Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "tables are at version 99, newer than this toolhub knows (2): upgrade toolhub") {
		t.Errorf("Open of a newer schema: err = %v, want a refusal naming both versions", err)
	}
}

// Stores opening a new schema at once create it once, and all of them work.
func TestConcurrentOpen(t *testing.T) {
	schema := newSchema(t)
	const n = 4
	errs := make(chan error, n)
	stores := make(chan *pgstore.Store, n)
	for range n {
		go func() {
			s, err := pgstore.Open(t.Context(), testDSN(), &pgstore.Options{Schema: schema, MaxConns: 2, Logger: quiet})
			if s != nil {
				stores <- s
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(stores)
	for s := range stores {
		t.Cleanup(func() { s.Close() })
		if _, err := s.PutVendor(t.Context(), registrytest.Vendors()[0], -1, "t"); err != nil {
			t.Error(err)
		}
	}
}

// Quoted identifiers work: the schema name is never pasted unquoted.
func TestOddSchemaName(t *testing.T) {
	schema := newSchema(t) + `"; DROP TABLE x; --`
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), testDSN())
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	})
	s := open(t, testDSN(), schema)
	if _, err := s.PutVendor(t.Context(), registrytest.Vendors()[0], 0, "t"); err != nil {
		t.Fatal(err)
	}
	if got := s.Schema(); got != schema {
		t.Errorf("Schema() = %q, want %q", got, schema)
	}
}

// A writer that inserts the next version behind the store's back (without
// its lock) makes the store's insert hit the (id, version) key: that is a
// conflict for an expected version, and a fresh attempt for any version.
func TestUniqueViolation(t *testing.T) {
	tests := []struct {
		expect      int64
		wantVersion int64 // 0: ErrVersionConflict
	}{
		{expect: 1, wantVersion: 0},
		{expect: -1, wantVersion: 3},
	}
	requirePostgres(t)
	for _, tt := range tests {
		t.Run(fmt.Sprintf("expect %d", tt.expect), func(t *testing.T) {
			ctx := t.Context()
			app := uniqueName("toolhub_unique_test_")
			schema := newSchema(t)
			s := open(t, withAppName(t, testDSN(), app), schema)
			v := registrytest.Vendors()[0]
			if _, err := s.PutVendor(ctx, v, 0, "t"); err != nil {
				t.Fatal(err)
			}

			other, err := pgx.Connect(ctx, testDSN())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close(context.Background())
			tx, err := other.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if _, err := tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema}.Sanitize()+`.vendor_versions
				SELECT id, 2, spec, now(), 'other' FROM `+pgx.Identifier{schema}.Sanitize()+`.vendor_versions WHERE id = $1`, v.ID); err != nil {
				t.Fatal(err)
			}

			type result struct {
				r   registry.VendorRecord
				err error
			}
			done := make(chan result, 1)
			go func() {
				r, err := s.PutVendor(ctx, v, tt.expect, "t")
				done <- result{r, err}
			}()
			// Commit once the store's insert waits on the other's row.
			waitFor(t, `SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			got := <-done
			if tt.wantVersion == 0 {
				if !errors.Is(got.err, registry.ErrVersionConflict) {
					t.Fatalf("PutVendor(expect %d): err = %v, want ErrVersionConflict", tt.expect, got.err)
				}
				return
			}
			if got.err != nil || got.r.Version != tt.wantVersion {
				t.Fatalf("PutVendor(expect %d): version %d, err %v; want version %d", tt.expect, got.r.Version, got.err, tt.wantVersion)
			}
		})
	}
}

// waitFor polls query (a boolean) on a connection of its own until it is
// true; it fails the test after 30 s.
func waitFor(t *testing.T, query string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), testDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		if err := conn.QueryRow(t.Context(), query, args...).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still false after 30 s: %s", query)
		}
		time.Sleep(10 * time.Millisecond) // polling an observable condition, not timing a window
	}
}
