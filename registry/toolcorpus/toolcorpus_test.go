package toolcorpus

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/registry"
)

var update = flag.Bool("update", false, "rewrite testdata/goals.json")

// The goal set kept in testdata is the generator's.
func TestGoalsFile(t *testing.T) {
	got := Goals()
	if *update {
		b, _ := json.MarshalIndent(got, "", " ")
		if err := os.WriteFile("testdata/goals.json", append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile("testdata/goals.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []Goal
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("testdata/goals.json is not the generator's (go test -update):\n%s", diff)
	}
	count := map[string]int{}
	for _, g := range got {
		count[g.Lang+" "+g.Half]++
	}
	if len(got) < 300 || count["en tune"] != count["en held-out"] || count["zh tune"] != count["zh held-out"] || count["en tune"] != count["zh tune"] {
		t.Errorf("%d goals, by language and half %v", len(got), count)
	}
}

// Generate is deterministic, makes valid vendors, and names every tool's
// function.
func TestGenerate(t *testing.T) {
	a, b := Generate(120, 7), Generate(120, 7)
	if !cmp.Equal(a.Vendors, b.Vendors) {
		t.Fatal("the same seed gave two corpora")
	}
	if a.Tools() != 120*ToolsPerVendor {
		t.Errorf("%d tools", a.Tools())
	}
	cat := registry.NewCatalog()
	seen := map[string]bool{}
	for _, v := range a.Vendors {
		if err := registry.ValidateVendorID(v.ID); err != nil || seen[v.ID] {
			t.Fatalf("vendor id %q: %v (seen %v)", v.ID, err, seen[v.ID])
		}
		seen[v.ID] = true
		if errs := cat.SetVendorTools(v.ID, v.Tools); len(errs) > 0 {
			t.Fatalf("%s: %v", v.ID, errs)
		}
		for _, tl := range v.Tools {
			if a.Function(v.ID, tl.Name) == "" {
				t.Errorf("%s %s has no function", v.ID, tl.Name)
			}
		}
	}
	if len(cat.Tools()) != a.Tools() {
		t.Errorf("catalog has %d tools of %d", len(cat.Tools()), a.Tools())
	}
}
