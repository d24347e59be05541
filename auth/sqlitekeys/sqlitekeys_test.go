package sqlitekeys_test

import (
	"context"
	"testing"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/auth/authtest"
	"github.com/toolhub/toolhub/auth/sqlitekeys"
	"github.com/toolhub/toolhub/internal/x/sqlitedb/sqlitedbtest"
)

// The contract, on a data folder whose path a file: URI must escape; the
// second store on one file is two hubs on one data folder (or `toolhub
// keys` beside a hub).
func TestContract(t *testing.T) {
	fresh, again := sqlitedbtest.Stores("keys.db", func(ctx context.Context, path string) (auth.Store, error) {
		return sqlitekeys.Open(ctx, path)
	})
	authtest.Run(t, fresh, again)
}
