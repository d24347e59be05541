package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolhub/toolhub/registry"
)

// A vendor's tools go into the catalog with their schemas compiled once; a
// tool whose schema does not compile is left out, the others are served.
func ExampleCatalog_SetVendorTools() {
	cat := registry.NewCatalog()
	rejected := cat.SetVendorTools("weather-a", []registry.ToolDef{
		{Name: "current_weather", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "broken", InputSchema: json.RawMessage(`{"type":"integr"}`)},
	})
	fmt.Println("rejected:", len(rejected))

	e, ok := cat.Lookup("weather-a__current_weather")
	fmt.Println(ok, e.Tool.Vendor, e.Tool.Name())
	fmt.Println(e.Tool.ValidateInput(map[string]any{"city": "Paris"}))
	fmt.Println(e.Tool.ValidateInput(map[string]any{}) != nil)
	_, ok = cat.Lookup("weather-a__broken")
	fmt.Println(ok)
	// Output:
	// rejected: 1
	// true weather-a current_weather
	// <nil>
	// true
	// false
}

// An update of a vendor's tools is compared with what is live: what
// callers would notice needs an operator's approval.
func ExampleBreakingChanges() {
	old := []registry.ToolDef{
		{Name: "search", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
		{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	updated := []registry.ToolDef{
		{Name: "search", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
		{Name: "suggest", InputSchema: json.RawMessage(`{"type":"object"}`)}, // added: not breaking
	}
	for _, b := range registry.BreakingChanges(old, updated) {
		fmt.Println(b)
	}
	// Output:
	// tool "search": argument "q" is now required
	// tool "lookup" removed
}

// Vendors registered at run time are stored with every version kept; a
// writer that read an older version than the stored one is refused.
func ExampleStore() {
	ctx := context.Background()
	s := registry.NewMemoryStore() // sqlstore and pgstore behave the same
	defer s.Close()
	spec := registry.Vendor{ID: "maps", MCP: &registry.MCPSpec{Transport: registry.TransportHTTP, URL: "http://127.0.0.1:9100/maps/mcp"}}
	rec, err := s.PutVendor(ctx, spec, 0, "key-1") // 0: a new vendor
	fmt.Println(rec.Version, err)
	spec.Timeout = registry.Duration(5 * time.Second)
	rec, err = s.PutVendor(ctx, spec, rec.Version, "key-1")
	fmt.Println(rec.Version, err)
	_, err = s.PutVendor(ctx, spec, 1, "key-2") // read version 1, but 2 is stored
	fmt.Println(errors.Is(err, registry.ErrVersionConflict))

	h, _ := s.VendorHistory(ctx, "maps")
	for _, r := range h {
		fmt.Println("version", r.Version, "timeout", r.Vendor.Timeout.D(), "by", r.UpdatedBy)
	}
	// Output:
	// 1 <nil>
	// 2 <nil>
	// true
	// version 1 timeout 0s by key-1
	// version 2 timeout 5s by key-1
}
