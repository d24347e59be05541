package registry

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestCheckToolDef(t *testing.T) {
	tests := []struct {
		name string
		def  ToolDef
		want string // "" means within bounds
	}{
		{"small", ToolDef{Name: "a", Description: "d"}, ""},
		{"description at the limit", ToolDef{Name: "a", Description: strings.Repeat("d", MaxDescriptionBytes)}, ""},
		{"description over", ToolDef{Name: "a", Description: strings.Repeat("d", MaxDescriptionBytes+1)}, `vendor "v": tool "a": description: 16385 bytes, over the 16384-byte limit`},
		{"title over", ToolDef{Name: "a", Title: strings.Repeat("t", MaxTitleBytes+1)}, "title: 1025 bytes"},
		{"annotations over", ToolDef{Name: "a", Annotations: []byte(`"` + strings.Repeat("x", MaxAnnotationsBytes) + `"`)}, "annotations:"},
		{"name over", ToolDef{Name: strings.Repeat("n", 300)}, "name: 300 bytes, over the 256-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckToolDef("v", tt.def)
			var te *ToolError
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("err = %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &te)):
				t.Errorf("err = %v, want a *ToolError with %q", err, tt.want)
			}
		})
	}
}

// A catalog update over the vendor's bounds keeps the tools that fit, in
// order, and reports the others.
func TestSetVendorToolsBounded(t *testing.T) {
	desc := strings.Repeat("d", MaxDescriptionBytes)
	var defs []ToolDef
	for i := range MaxVendorCatalogBytes/MaxDescriptionBytes + 10 {
		defs = append(defs, ToolDef{Name: fmt.Sprintf("t%04d", i), Description: desc})
	}
	c := NewCatalog()
	errs := c.SetVendorTools("v", defs)
	n := len(c.VendorTools("v"))
	if n == 0 || n >= len(defs) || n+len(errs) != len(defs) || !strings.Contains(errs[0].Error(), "over 1000 tools or 4194304 bytes") {
		t.Fatalf("%d tools taken of %d, errors %d: %v", n, len(defs), len(errs), errs[:1])
	}
	if err := CheckCatalog("v", defs); !errors.Is(err, ErrCatalogTooLarge) {
		t.Errorf("CheckCatalog = %v", err)
	}
}

func TestVendorBounds(t *testing.T) {
	base := func() Vendor {
		return Vendor{ID: "vx", MCP: &MCPSpec{Transport: TransportHTTP, URL: "https://vx.example/mcp"}}
	}
	tests := []struct {
		name   string
		mod    func(*Vendor)
		want   string // from Validate
		selfSv string // from ValidateSelfService
	}{
		{"fine", func(v *Vendor) {}, "", ""},
		{"probe 1ns", func(v *Vendor) { v.Probe = &Probe{Interval: Duration(1)} }, "probe: interval 1ns: under the floor of 100ms", "under the floor of 1s"},
		{"probe 500ms", func(v *Vendor) { v.Probe = &Probe{Interval: Duration(500 * time.Millisecond)} }, "", "probe: interval 500ms: under the floor of 1s"},
		{"timeout", func(v *Vendor) { v.Timeout = Duration(time.Hour) }, "timeout 1h0m0s: over the limit of 10m0s", ""},
		{"headers", func(v *Vendor) {
			v.MCP.Headers = map[string]string{}
			for i := range MaxHeaders + 1 {
				v.MCP.Headers[fmt.Sprintf("X-%d", i)] = "v"
			}
		}, "mcp: headers: 33, over the limit of 32", ""},
		{"header value", func(v *Vendor) { v.MCP.Headers = map[string]string{"X": strings.Repeat("v", MaxHeaderBytes)} }, `mcp: header "X": 8193 bytes`, ""},
		{"url", func(v *Vendor) { v.MCP.URL = "https://vx.example/" + strings.Repeat("p", MaxURLBytes) }, "mcp: url: 2067 bytes", ""},
		{"redact list", func(v *Vendor) { v.Redact = make([]string, MaxSpecListLen+1) }, "redact: 257 entries", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := base()
			tt.mod(&v)
			for _, c := range []struct {
				err  error
				want string
			}{{v.Validate(), tt.want}, {v.ValidateSelfService(), tt.selfSv}} {
				switch {
				case c.want == "" && c.err != nil:
					t.Errorf("err = %v", c.err)
				case c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want)):
					t.Errorf("err = %v, want %q", c.err, c.want)
				}
			}
		})
	}
}

// ${VAR} is expanded in an MCP url too, so a vendor key's url may refer
// only to the vendor's own variables (issue 12, defect 2).
func TestCheckOwnEnvRefs(t *testing.T) {
	v := Vendor{ID: "vx", MCP: &MCPSpec{Transport: TransportHTTP, URL: "https://vx.example/mcp?k=${HUB_SECRET}"}}
	if err := v.CheckOwnEnvRefs(); err == nil || !strings.Contains(err.Error(), "${HUB_SECRET}") || !strings.Contains(err.Error(), "TOOLHUB_VENDOR_VX_") {
		t.Errorf("a url referring to the hub's variable: %v", err)
	}
	v.MCP.URL = "https://vx.example/mcp?k=${TOOLHUB_VENDOR_VX_K}"
	v.MCP.Headers = map[string]string{"Authorization": "Bearer ${TOOLHUB_VENDOR_VX_T}"}
	if err := v.CheckOwnEnvRefs(); err != nil {
		t.Errorf("own variables: %v", err)
	}
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "",
		"sk-123":                  Masked,
		"${K}":                    "${K}",
		"Bearer ${K}":             "Bearer ${K}",
		"bearer  ${K}":            "bearer  ${K}",
		"Bearer sk-1 ${K}":        Masked + "${K}",
		"${A} ${B}":               "${A} ${B}",
		"${A}:${B}":               "${A}" + Masked + "${B}",
		"x${K}y":                  Masked + "${K}" + Masked,
		"Bearer sk-live-abcdefgh": Masked,
		"${NOT CLOSED":            Masked,
	} {
		if got := MaskValue(in); got != want {
			t.Errorf("MaskValue(%q) = %q, want %q", in, got, want)
		}
	}
	h := MaskHeaders(map[string]string{"Accept": "application/json", "X-Access-Key": "k1", "Ocp-Apim-Subscription-Key": "k2"})
	if h["Accept"] != "application/json" || h["X-Access-Key"] != Masked || h["Ocp-Apim-Subscription-Key"] != Masked {
		t.Errorf("MaskHeaders = %v", h)
	}
	for in, want := range map[string]string{
		"https://vx.example/mcp":                  "https://vx.example/mcp",
		"https://u:pw@vx.example/mcp":             "https://u:[redacted]@vx.example/mcp",
		"https://vx.example/mcp?key=sk1":          "https://vx.example/mcp?key=[redacted]",
		"https://vx.example/mcp?t=${TOOLHUB_V_T}": "https://vx.example/mcp?t=${TOOLHUB_V_T}",
	} {
		if got := MaskURL(in); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", in, got, want)
		}
	}
}
