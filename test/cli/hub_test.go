package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/examples/vendors"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

// peers returns the installed npm peers' folder, or skips.
func peers(t *testing.T) string {
	dir := os.Getenv("TOOLHUB_PEERS")
	if dir == "" {
		dir = "../../.cache/peers"
	}
	dir, _ = filepath.Abs(dir)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")); err != nil {
		t.Fatalf("npm peers are not installed in %s (run `make peers`): %v", dir, err)
	}
	return dir
}

// TestCLIAgainstAHub runs the client commands against one hub with auth
// off: --hub without a scheme, LAST ERROR, call --timeout, and a stdio
// vendor added with --command.
func TestCLIAgainstAHub(t *testing.T) {
	addr, vs := serveVendors(t, vendors.WeatherA)
	h := startHub(t, `
addr: 127.0.0.1:0
admin: {allow_stdio_vendors: true}
outbound: {allow: ["`+addr+`"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: http://`+addr+`/weather-a/mcp}
    timeout: 60s
  - id: gone
    mcp: {transport: stdio, command: /nonexistent/toolhub-test-vendor}
`, "", "weather-a")
	hostPort := strings.TrimPrefix(h.URL(), "http://")

	t.Run("--hub without a scheme, LAST ERROR shown", func(t *testing.T) {
		var row string
		drilltest.WaitFor(t, 60*time.Second, "vendor gone has a last error", func() bool {
			out, errOut, code := th(t, nil, "vendors", "--hub", hostPort)
			if code != 0 {
				t.Fatalf("vendors --hub %s: %d %s", hostPort, code, errOut)
			}
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "gone ") {
					row = l
				}
			}
			return row != "" && !strings.HasSuffix(strings.TrimSpace(row), " -")
		})
		if !strings.Contains(row, "nonexistent") && !strings.Contains(row, "no such file") {
			t.Errorf("LAST ERROR of vendor gone: %q", row)
		}
	})

	t.Run("call --timeout", func(t *testing.T) {
		k := vs[vendors.WeatherA].Knobs()
		k.Mode = vendors.ModeHang
		vs[vendors.WeatherA].SetKnobs(k)
		defer func() { k.Mode = vendors.ModeOK; vs[vendors.WeatherA].SetKnobs(k) }()
		out, errOut, code := th(t, nil, "call", "weather-a__current_weather", `{"city":"Oslo"}`, "--timeout", "300ms", "--hub", hostPort)
		// The hub ends the call at the caller's deadline with a timeout error.
		if code != 1 || !strings.Contains(errOut, "timeout") {
			t.Errorf("call --timeout 300ms on a hanging vendor: %d %s %s", code, out, errOut)
		}
	})

	t.Run("vendors add --command", func(t *testing.T) {
		everything := filepath.Join(peers(t), "node_modules", ".bin", "mcp-server-everything")
		out, errOut, code := th(t, nil, "vendors", "add", "everything", "--command", everything, "--arg", "stdio", "--hub", hostPort)
		if code != 0 || !strings.Contains(out, `"status": "live"`) {
			t.Fatalf("vendors add --command: %d %s %s", code, out, errOut)
		}
		// Registration checks the server with a connection of its own; the
		// hub's connection (a new process) brings the tools a moment later.
		drilltest.WaitFor(t, 60*time.Second, "everything__echo in the catalog", func() bool {
			out, _, _ := th(t, nil, "tools", "--hub", hostPort)
			return strings.Contains(out, "everything__echo")
		})
		out, errOut, code = th(t, nil, "call", "everything__echo", `{"message":"hello from stdio"}`, "--hub", hostPort)
		if code != 0 || !strings.Contains(out, "hello from stdio") {
			tools, _, _ := th(t, nil, "tools", "--hub", hostPort)
			vs, _, _ := th(t, nil, "vendors", "--hub", hostPort)
			t.Errorf("calling the stdio vendor: %d %s %s\ntools:\n%s\nvendors:\n%s", code, out, errOut, tools, vs)
		}
	})
}

// TestApprovalsFromTheCLI: with auth on, a 401 names TOOLHUB_KEY; a vendor
// key's breaking update waits; the operator lists, approves and rejects
// pending changes with `toolhub vendors pending|approve|reject`.
func TestApprovalsFromTheCLI(t *testing.T) {
	addr, _ := serveVendors(t, vendors.WeatherA, vendors.Maps)
	data := t.TempDir()
	key := func(args ...string) string {
		out, errOut, code := th(t, nil, append([]string{"keys", "create", "--data", data}, args...)...)
		if code != 0 {
			t.Fatalf("keys create: %d %s", code, errOut)
		}
		for _, f := range strings.Fields(out) {
			if strings.HasPrefix(f, "thk_") {
				return f
			}
		}
		t.Fatalf("no token in %q", out)
		return ""
	}
	op, vendorKey, tenantKey := key("--role", "operator"), key("--role", "vendor", "--vendor", "vz"), key("--role", "tenant", "--tenant", "acme")
	h := startHub(t, `
addr: 127.0.0.1:0
auth: {enabled: true}
outbound: {allow: ["`+addr+`"]}
`, data)
	hub := "--hub=" + h.URL()

	if out, errOut, code := th(t, nil, "tools", hub); code != 1 || !strings.Contains(errOut, "unauthenticated") || !strings.Contains(errOut, "set TOOLHUB_KEY") {
		t.Errorf("tools without a key: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := th(t, []string{"TOOLHUB_KEY=thk_wrong"}, "tools", hub); code != 1 || !strings.Contains(errOut, "TOOLHUB_KEY was refused") {
		t.Errorf("tools with a bad key: %d %s %s", code, out, errOut)
	}
	asVendor, asOp := []string{"TOOLHUB_KEY=" + vendorKey}, []string{"TOOLHUB_KEY=" + op}
	weather, maps := "http://"+addr+"/weather-a/mcp", "http://"+addr+"/maps/mcp"
	if out, errOut, code := th(t, asVendor, "vendors", "add", "vz", "--url", weather, hub); code != 0 || !strings.Contains(out, `"live"`) {
		t.Fatalf("vendors add: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := th(t, asVendor, "vendors", "update", "vz", "--url", maps, hub); code != 0 || !strings.Contains(out, `"pending_approval"`) {
		t.Fatalf("breaking update: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := th(t, asOp, "vendors", "pending", hub); code != 0 || !strings.Contains(out, `"vz"`) || !strings.Contains(out, "current_weather") {
		t.Errorf("vendors pending: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := th(t, asVendor, "vendors", "approve", "vz", hub); code != 1 || !strings.Contains(errOut, "forbidden") {
		t.Errorf("a vendor approving its own change: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := th(t, asOp, "vendors", "approve", "vz", hub); code != 0 || !strings.Contains(out, `"live"`) {
		t.Fatalf("vendors approve: %d %s %s", code, out, errOut)
	}
	drilltest.WaitFor(t, 60*time.Second, "vz__route in the catalog", func() bool {
		out, _, _ := th(t, []string{"TOOLHUB_KEY=" + tenantKey}, "tools", hub)
		return strings.Contains(out, "vz__route")
	})
	if out, errOut, code := th(t, asVendor, "vendors", "update", "vz", "--url", weather, hub); code != 0 || !strings.Contains(out, `"pending_approval"`) {
		t.Fatalf("second breaking update: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := th(t, asOp, "vendors", "reject", "vz", hub); code != 0 || !strings.Contains(out, `"rejected"`) {
		t.Errorf("vendors reject: %d %s %s", code, out, errOut)
	}
	if out, _, _ := th(t, asOp, "vendors", "pending", hub); strings.Contains(out, `"vz"`) {
		t.Errorf("still pending after reject: %s", out)
	}
}
