package pgkeys_test

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/auth/sqlitekeys"
	"github.com/toolhub/toolhub/internal/x/pgtest"
)

// BenchmarkVerify is the per-request cost of authentication: auth.Verify
// of a valid token, as the front door does on every request. The memory
// and SQLite stores are there to compare with.
func BenchmarkVerify(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) auth.Store
	}{
		{"memory", func(b *testing.B) auth.Store { return auth.NewMemoryStore() }},
		{"sqlite", func(b *testing.B) auth.Store {
			s, err := sqlitekeys.Open(b.Context(), filepath.Join(b.TempDir(), "keys.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"postgres-cached", func(b *testing.B) auth.Store {
			s := open(b, pgtest.Schema(b), 0)
			waitListening(b, s)
			return s
		}},
		{"postgres-uncached", func(b *testing.B) auth.Store { return open(b, pgtest.Schema(b), -1) }},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			tok, _, err := auth.Issue(b.Context(), s, auth.Key{Role: auth.RoleTenant, Tenant: "acme"}, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := auth.Verify(b.Context(), s, tok); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkRevocationSeen is how long a revocation on one hub takes to be
// refused by another that had the key cached: revoke through b, then
// verify through a until it is refused.
func BenchmarkRevocationSeen(b *testing.B) {
	schema := pgtest.Schema(b)
	x, y := open(b, schema, 0), open(b, schema, 0)
	waitListening(b, x)
	waitListening(b, y)
	ctx := b.Context()
	var after time.Duration // from Revoke's return to a's refusal
	for b.Loop() {
		b.StopTimer()
		tok, k, err := auth.Issue(ctx, y, auth.Key{Role: auth.RoleOperator}, 0)
		if err != nil {
			b.Fatal(err)
		}
		for { // until x has it cached (the issue's own notification may evict it once)
			if _, err := auth.Verify(ctx, x, tok); err == nil && x.Cached(k.ID) {
				break
			}
		}
		b.StartTimer()
		if err := auth.Revoke(ctx, y, k.ID); err != nil {
			b.Fatal(err)
		}
		returned := time.Now()
		for {
			if _, err := auth.Verify(ctx, x, tok); err != nil {
				break
			}
			runtime.Gosched() // let the listener run on a busy machine
		}
		after += time.Since(returned)
	}
	b.ReportMetric(float64(after.Microseconds())/float64(b.N), "µs-after-revoke/op")
}
