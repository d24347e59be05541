// Package layout checks rules of the module's shape that no compiler
// enforces: which packages may import examples/, and that the drill runs
// its own executable rather than building one.
package layout

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/toolhub/toolhub"

// TestProductDoesNotImportExamples: the hub and its libraries never import
// the example vendors; cmd/toolhub wires them (`make run`), tests (and
// test/harness, which starts them for tests) use them.
// Only the non-test imports count (go list's .Imports).
func TestProductDoesNotImportExamples(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg, imports := f[0], f[1:]
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		// test/ is tests: test/harness serves the example vendors to them.
		if strings.HasPrefix(rel, "cmd/") || strings.HasPrefix(rel, "examples/") || rel == "examples" || strings.HasPrefix(rel, "test/") {
			continue
		}
		checked++
		for _, imp := range imports {
			if imp != module+"/examples" && !strings.HasPrefix(imp, module+"/examples/") {
				continue
			}
			t.Errorf("%s imports %s: the product does not import examples/ (cmd/toolhub wires the example vendors)", pkg, imp)
		}
	}
	if checked < 20 {
		t.Fatalf("go list checked only %d packages: %s", checked, out)
	}
}

// TestDrillDoesNotBuild: `toolhub drill` runs its own executable
// (os.Executable); no non-test file of internal/drill runs `go build`.
// Tests build the binary with drilltest.BuildBinary.
func TestDrillDoesNotBuild(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "internal", "drill", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("internal/drill: %v %v", files, err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Command" && sel.Sel.Name != "CommandContext") {
				return true
			}
			for _, a := range call.Args {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, _ := strconv.Unquote(lit.Value); s == "go" {
						t.Errorf("%s: runs the go command; toolhub drill runs its own executable (os.Executable)", fset.Position(call.Pos()))
					}
				}
			}
			return true
		})
	}
}
