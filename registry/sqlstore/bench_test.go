package sqlstore_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/toolhub/toolhub/registry/registrytest"
)

// BenchmarkPutVendor stores new versions of one vendor (expect -1).
func BenchmarkPutVendor(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "registry.db"))
	v := registrytest.Vendors()[1]
	for b.Loop() {
		if _, err := s.PutVendor(b.Context(), v, -1, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListVendors lists 100 vendors of 3 versions each.
func BenchmarkListVendors(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "registry.db"))
	v := registrytest.Vendors()[1]
	for i := range 100 {
		v.ID = fmt.Sprintf("vendor-%03d", i)
		for range 3 {
			if _, err := s.PutVendor(b.Context(), v, -1, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		list, err := s.ListVendors(b.Context())
		if err != nil || len(list) != 100 {
			b.Fatalf("ListVendors: %d vendors, %v", len(list), err)
		}
	}
}
