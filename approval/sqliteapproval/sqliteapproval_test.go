package sqliteapproval_test

import (
	"context"
	"testing"

	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/approval/approvaltest"
	"github.com/toolhub/toolhub/approval/sqliteapproval"
	"github.com/toolhub/toolhub/internal/x/sqlitedb/sqlitedbtest"
)

// The contract, on a data folder whose path a file: URI must escape.
func TestContract(t *testing.T) {
	fresh, again := sqlitedbtest.Stores("registry.db", func(ctx context.Context, path string) (approval.Store, error) {
		return sqliteapproval.Open(ctx, path)
	})
	approvaltest.Run(t, fresh, again)
}
