package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/examples/drillvendors"
	"github.com/toolhub/toolhub/internal/drill"
)

func runCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return out.String() + errb.String(), code
}

// TestKeysAndVendorSelfServiceFromTheCLI makes a vendor key in the data
// folder of a running hub with auth on, then registers that vendor
// through the hub with `toolhub vendors add`.
func TestKeysAndVendorSelfServiceFromTheCLI(t *testing.T) {
	l, err := drillvendors.NewLab(t.Context(), drill.LabOptions{Config: `
auth: {enabled: true}
outbound: {allow: ["{{vendors_addr}}"]}
`})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out, code := runCmd(t, "keys", "create", "--role", "vendor", "--vendor", "vz", "--data", l.DataDir())
	if code != 0 {
		t.Fatalf("keys create: %d %s", code, out)
	}
	var tok string
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "thk_") {
			tok = f
		}
	}
	if tok == "" {
		t.Fatalf("no token printed: %s", out)
	}
	if out, code := runCmd(t, "vendors", "add", "vz", "--url", l.URL+"/maps/mcp", "--hub", l.HubURL); code == 0 || !strings.Contains(out, "unauthenticated") {
		t.Errorf("without a key: %d %s", code, out)
	}
	t.Setenv("TOOLHUB_KEY", tok)
	out, code = runCmd(t, "vendors", "add", "vz", "--url", l.URL+"/maps/mcp", "--hub", l.HubURL)
	if code != 0 || !strings.Contains(out, `"status": "live"`) || !strings.Contains(out, `"route"`) {
		t.Fatalf("vendors add: %d %s", code, out)
	}
	if out, code := runCmd(t, "vendors", "add", "other", "--url", l.URL+"/maps/mcp", "--hub", l.HubURL); code == 0 || !strings.Contains(out, "forbidden") {
		t.Errorf("adding another vendor: %d %s", code, out)
	}
	if out, code := runCmd(t, "keys", "list", "--data", l.DataDir()); code != 0 || !strings.Contains(out, "vendor") || strings.Contains(out, tok) {
		t.Errorf("keys list: %d %s", code, out)
	}
}
