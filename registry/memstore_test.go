package registry_test

import (
	"testing"

	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/registrytest"
)

func TestMemoryStoreContract(t *testing.T) {
	registrytest.RunStoreContract(t, func(t *testing.T) registry.Store {
		s := registry.NewMemoryStore()
		t.Cleanup(func() { s.Close() })
		return s
	})
}
