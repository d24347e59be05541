package servers

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/registry"
)

// FuzzToolsListAnswer fuzzes what the hub does with a vendor's tools/list
// answer: decode the page (parseToolsPage), check every definition's
// bounds, and compile it into a catalog (registry.SetVendorTools). Nothing
// may panic, every tool taken is within the bounds, and every tool left
// out is reported with an error naming the vendor.
func FuzzToolsListAnswer(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"echo","description":"Echoes.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object"},"outputSchema":{"type":"object","required":["x"]}}],"nextCursor":"p2"}`,
		`{"tools":[{"name":"","inputSchema":{}},{"name":"b","inputSchema":{"$ref":"http://x/s.json"}},{"name":"b"}]}`,
		`{"tools":[{"name":"d","description":"` + strings.Repeat("x", registry.MaxDescriptionBytes+1) + `"}]}`,
		`{"tools":[{"name":"x","inputSchema":{"type":"object","properties":{"a":{"type":"integr"}}}},{"name":"y","annotations":{"readOnlyHint":true}}]}`,
		`{"tools":[1,"two",null,{"name":3}]}`,
		`{"tools":null}`, `[]`, `null`, `{"tools":[{"name":"read.file","title":"Read"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		defs, bad, _, err := parseToolsPage("fz", json.RawMessage(raw), nil)
		if err != nil {
			return // not a tools/list result: the sync fails with that error
		}
		for _, d := range defs {
			if err := registry.CheckToolDef("fz", d); err != nil {
				t.Fatalf("a tool over its bounds was taken: %v", err)
			}
		}
		for _, e := range bad {
			var te *registry.ToolError
			if !errors.As(e, &te) || te.Vendor != "fz" || te.Part == "" {
				t.Fatalf("a left-out tool without a vendor, tool and part: %v", e)
			}
		}
		cat := registry.NewCatalog()
		errs := cat.SetVendorTools("fz", defs)
		tools := cat.VendorTools("fz")
		if len(tools)+len(errs) != len(defs) {
			t.Fatalf("%d definitions became %d tools and %d errors", len(defs), len(tools), len(errs))
		}
		size := 0
		for _, tl := range tools {
			size += registry.DefBytes(tl.Def)
			if !strings.HasPrefix(tl.Catalog, "fz__") || len(tl.Catalog) > 64 {
				t.Fatalf("catalog name %q", tl.Catalog)
			}
		}
		if len(tools) > registry.MaxVendorTools || size > registry.MaxVendorCatalogBytes {
			t.Fatalf("catalog over its bounds: %d tools, %d bytes", len(tools), size)
		}
		for _, e := range errs {
			if !strings.Contains(e.Error(), `vendor "fz"`) {
				t.Fatalf("error without the vendor: %v", e)
			}
		}
	})
}
