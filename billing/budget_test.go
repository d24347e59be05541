package billing_test

import (
	"testing"

	"github.com/toolhub/toolhub/billing"
	"github.com/toolhub/toolhub/billing/budgettest"
)

func TestLocalBudgetStoreContract(t *testing.T) {
	budgettest.Run(t, func(t *testing.T) billing.BudgetStore { return billing.NewLocalBudgetStore(nil) })
}
