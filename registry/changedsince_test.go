package registry

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// TestChangedSince: the catalog names the vendors changed after a
// version, and says when it cannot (capabilities changed, or too long ago).
func TestChangedSince(t *testing.T) {
	c := NewCatalog()
	def := func(n string) []ToolDef {
		return []ToolDef{{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)}}
	}
	c.SetVendorTools("a", def("x"))
	v0 := c.Version()
	c.SetVendorTools("b", def("x"))
	c.SetVendorTools("a", def("y"))
	c.SetVendorTools("a", def("y")) // no change
	c.RemoveVendor("b")
	got, ok := c.ChangedSince(v0)
	slices.Sort(got)
	if !ok || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("changed since %d: %v %v", v0, got, ok)
	}
	if got, ok := c.ChangedSince(c.Version()); !ok || len(got) != 0 {
		t.Fatalf("changed since now: %v %v", got, ok)
	}
	v1 := c.Version()
	c.SetCapabilities(nil)
	if _, ok := c.ChangedSince(v1); ok {
		t.Fatal("capabilities changed: ok")
	}
	v2 := c.Version()
	for i := 0; i < changeLog+1; i++ {
		c.SetVendorTools(fmt.Sprint("v", i), def("x"))
	}
	if _, ok := c.ChangedSince(v2); ok {
		t.Fatal("too long ago: ok")
	}
	if got, ok := c.ChangedSince(c.Version() - 2); !ok || len(got) != 2 {
		t.Fatalf("last two: %v %v", got, ok)
	}
}
