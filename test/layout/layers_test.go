package layout

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// A layer is a room of the house: its packages, and the layers they may
// import (their own layer always). docs/architecture.md draws the picture.
type layer struct {
	name string
	// packages, relative to the module: "a/b" is that package, "a/b/..."
	// that package and every one below it. The longest match wins.
	packages  []string
	mayImport []string
}

// layers, bottom up. A package imports only packages of its own layer and of
// the layers its layer's mayImport names: an arrow never runs up.
var layers = []layer{
	{name: "leaves", // bricks with no toolhub policy in them: JSON, SQL helpers, the outbound guard
		packages:  []string{"internal/x/...", "netguard"},
		mayImport: nil},
	{name: "policies", // one rule each, importing nothing of toolhub
		packages:  []string{"hub/limit", "hub/breaker", "hub/retry"},
		mayImport: []string{"leaves"}},
	{name: "core", // the call and its pipeline, the catalogue, the domain interfaces stores implement
		packages: []string{"hub", "hub/tracing", "hub/httperr", "hub/cache", "hub/fallback", "hub/govern", "hub/jobs", "hub/vendorconn",
			"registry", "registry/poison", "registry/mcpregistry", "auth", "approval", "audit"},
		mayImport: []string{"leaves", "policies"}},
	{name: "adapters", // protocols and routes: the MCP and A2A vendors, the front doors, billing, the dashboard
		packages: []string{"servers/...", "a2a", "a2a/internal/taskrow", "api", "orchestrator", "ui", "billing",
			"auth/oauth"},
		mayImport: []string{"leaves", "policies", "core"}},
	{name: "stores", // implementations of the core's and adapters' store interfaces, and their contract suites
		packages: []string{
			"a2a/redistasks", "a2a/sqlitetasks", "a2a/taskstoretest",
			"approval/approvaltest", "approval/pgapproval", "approval/sqliteapproval",
			"audit/audittest", "audit/pgaudit",
			"auth/authtest", "auth/pgkeys", "auth/sqlitekeys",
			"billing/budgettest", "billing/internal/ledgersql", "billing/ledgertest", "billing/pgledger",
			"billing/redisbudget", "billing/redisvolume", "billing/sqlledger", "billing/volumetest",
			"hub/cache/cachetest", "hub/cache/rediscache",
			"hub/jobs/internal/jobrow", "hub/jobs/jobstest", "hub/jobs/redisjobs", "hub/jobs/sqlitejobs",
			"hub/limit/limittest", "hub/limit/redislimit",
			"registry/internal/specrows", "registry/pgstore", "registry/registrytest", "registry/sqlstore",
			"registry/toolcorpus", // a generated catalog and goals for the search evaluation
		},
		mayImport: []string{"leaves", "policies", "core", "adapters"}},
	{name: "wiring", // builds a hub from config: the only room that knows every other
		packages: []string{"internal/app", "internal/backend", "internal/config", "internal/drill/...",
			"internal/loadgen", "internal/vendorlife"},
		mayImport: []string{"leaves", "policies", "core", "adapters", "stores"}},
	{name: "examples", // example vendors, built on the product, wired by cmd/toolhub
		packages:  []string{"examples/..."},
		mayImport: []string{"leaves", "policies", "core", "adapters", "stores", "wiring"}},
	{name: "cmd", // the executables: flags and env in, wiring out
		packages:  []string{"cmd/..."},
		mayImport: []string{"leaves", "policies", "core", "adapters", "stores", "wiring", "examples"}},
	{name: "tests", // end-to-end and repository tests (no non-test imports of their own)
		packages:  []string{"test/...", "deploy"},
		mayImport: []string{"leaves", "policies", "core", "adapters", "stores", "wiring", "examples", "cmd"}},
}

// layerOf is the layer of pkg (relative to the module) and the table entry
// that placed it, or "" when none does.
func layerOf(pkg string) (name, entry string) {
	best := -1
	for _, l := range layers {
		for _, p := range l.packages {
			n := len(p)
			ok := pkg == p
			if base, sub := strings.CutSuffix(p, "/..."); sub {
				n = len(base)
				ok = pkg == base || strings.HasPrefix(pkg, base+"/")
			}
			if ok && n > best {
				best, name, entry = n, l.name, p
			}
		}
	}
	return name, entry
}

// TestLayers: every package of the module has a layer in the table above,
// and no non-test import (go list's .Imports) runs from a layer into one its
// layer may not import.
func TestLayers(t *testing.T) {
	byName := map[string]layer{}
	for _, l := range layers {
		byName[l.name] = l
	}
	for _, l := range layers {
		for _, m := range l.mayImport {
			if _, ok := byName[m]; !ok {
				t.Fatalf("layer %s may import %q: no such layer", l.name, m)
			}
		}
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	used := map[string]bool{}
	rel := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := rel(f[0])
		from, entry := layerOf(pkg)
		if from == "" {
			t.Errorf("package %s has no layer: add it to the layers table in test/layout/layers_test.go "+
				"(and to docs/architecture.md): a leaf under internal/x/, a policy, core, an adapter, a store, wiring under internal/", pkg)
			continue
		}
		used[entry] = true
		checked++
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to, _ := layerOf(rel(imp))
			if to == "" || to == from || slices.Contains(byName[from].mayImport, to) {
				continue // an unplaced import is reported as a package of its own
			}
			t.Errorf("%s (%s) imports %s (%s): an arrow up; %s may import %s. Move the code the import wants down "+
				"to a layer %s may import (docs/architecture.md), rather than widening the table",
				pkg, from, rel(imp), to, from, list(byName[from].mayImport), from)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("go list placed only %d packages: %s", checked, out)
	}
	for _, l := range layers {
		for _, p := range l.packages {
			if !used[p] {
				t.Errorf("layer %s lists %s, which places no package: remove it from the table", l.name, p)
			}
		}
	}
}

func list(names []string) string {
	if len(names) == 0 {
		return "nothing of toolhub"
	}
	return fmt.Sprintf("only its own layer and %s", strings.Join(names, ", "))
}

// TestLayerOf: the longest entry places a package; a subtree entry places
// the package it names and those below it, not a sibling sharing a prefix.
func TestLayerOf(t *testing.T) {
	for _, tc := range []struct{ pkg, want string }{
		{"hub", "core"},
		{"hub/limit", "policies"},
		{"hub/limit/redislimit", "stores"},
		{"internal/x/jsonscan", "leaves"},
		{"internal/xylophone", ""},
		{"internal/app", "wiring"},
		{"internal/apple", ""},
		{"servers/internal/testvendor", "adapters"},
		{"hub/newpolicy", ""},
	} {
		if got, _ := layerOf(tc.pkg); got != tc.want {
			t.Errorf("layerOf(%q) = %q, want %q", tc.pkg, got, tc.want)
		}
	}
}
