package orchestrator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/internal/app"
	"github.com/toolhub/toolhub/internal/config"
	. "github.com/toolhub/toolhub/orchestrator"
	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/servers"
)

// everythingBin returns the installed server-everything (npm peer), from
// TOOLHUB_PEERS or the repository's .cache/peers.
func everythingBin(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TOOLHUB_PEERS")
	if dir == "" {
		dir = "../.cache/peers"
	}
	dir, _ = filepath.Abs(dir)
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("npm peers are not installed in %s (run `make peers`, or set TOOLHUB_PEERS): %v", dir, err)
	}
	return bin
}

// everythingHub runs a hub (the real app) with server-everything as a
// stdio vendor, and waits until its tools are in the catalog.
func everythingHub(t *testing.T) *app.App {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
addr: 127.0.0.1:0
data: %s
vendors:
  - id: everything
    mcp: {transport: stdio, command: %s}
    timeout: 20s
`, t.TempDir(), everythingBin(t))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); a.Close() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := a.Manager.Status("everything")
		if st.State == servers.StateReady && st.Tools > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything not ready: %+v", st)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, not timing
	}
	return a
}

// The checked-in tool list (testdata/everything-tools.json, the evaluation
// set's catalog) is what the pinned server-everything really lists: names,
// titles, descriptions and input schemas, which is all the planner reads.
// After an upgrade of the peer, or a change of the client capabilities
// toolhub declares (server-everything offers its sampling, elicitation and
// roots tools only to clients that declare them), refresh the fixture:
// go test ./orchestrator -run TestEverythingFixtureMatchesThePeer -update
var update = flag.Bool("update", false, "rewrite testdata/everything-tools.json from the live server-everything")

func TestEverythingFixtureMatchesThePeer(t *testing.T) {
	a := everythingHub(t)
	type view struct {
		Name, Title, Description string
		InputSchema              any
	}
	norm := func(defs []registry.ToolDef) map[string]view {
		out := map[string]view{}
		for _, d := range defs {
			var s any
			if err := json.Unmarshal(d.InputSchema, &s); err != nil {
				t.Fatal(err)
			}
			out[d.Name] = view{d.Name, d.Title, d.Description, s}
		}
		return out
	}
	var live []registry.ToolDef
	for _, tl := range a.Catalog.VendorTools("everything") {
		live = append(live, tl.Def)
	}
	if *update {
		slices.SortFunc(live, func(x, y registry.ToolDef) int { return strings.Compare(x.Name, y.Name) })
		b, err := json.MarshalIndent(map[string]any{
			"server": "@modelcontextprotocol/server-everything", "version": everythingVersion(t), "tools": live,
		}, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/everything-tools.json", append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(norm(everythingTools(t)), norm(live)); diff != "" {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", " ")
		enc.Encode(live)
		t.Errorf("testdata/everything-tools.json differs from the live server-everything (-fixture +live)\n%s\nlive tools:\n%s", diff, b.String())
	}
}

// Goals in English and Chinese planned offline and run through the hub
// against the real server-everything.
func TestOfflinePlanRunsOnServerEverything(t *testing.T) {
	a := everythingHub(t)
	for _, tt := range []struct{ goal, want string }{
		{"add 3 and 5", "8"},
		{"3加5等于多少", "8"},
		{"echo hello world", "hello world"},
		{"add 2 and 2, then echo done", "done"},
	} {
		out, err := a.Planner.Run(t.Context(), "default", Request{Goal: tt.goal, Mode: ModeRules}, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.goal, err)
		}
		if out.Status != StatusOK || !strings.Contains(out.Answer, tt.want) {
			t.Errorf("%s: status %s, answer %q, want it to contain %q; steps %+v", tt.goal, out.Status, out.Answer, tt.want, out.Steps)
		}
		for _, s := range out.Steps {
			if s.Tool != IntegrateTool && (s.Provenance == nil || s.Provenance.Vendor != "everything") {
				t.Errorf("%s: step %s answered by %+v", tt.goal, s.ID, s.Provenance)
			}
		}
	}
	// Nothing in this catalog gives the weather: said so, nothing called.
	out, err := a.Planner.Run(t.Context(), "default", Request{Goal: "what's the weather in Paris"}, nil)
	if err == nil || out.Status != StatusNoMatch || len(out.Steps) != 0 {
		t.Errorf("weather on server-everything: %v %+v", err, out)
	}
}

// everythingVersion is the version of the installed server-everything.
func everythingVersion(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(os.Getenv("TOOLHUB_PEERS"), "node_modules", "@modelcontextprotocol", "server-everything", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Version string }
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p.Version
}
