package approval_test

import (
	"testing"

	"github.com/toolhub/toolhub/approval"
	"github.com/toolhub/toolhub/approval/approvaltest"
)

func TestMemory(t *testing.T) {
	approvaltest.Run(t, func(t *testing.T) approval.Store { return approval.NewMemory() }, nil)
}
