package layout

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modPkg is one package of the module, with the names a doc reference may
// point at: top-level identifiers, "Type.Method" and "Type.Field".
type modPkg struct {
	Path, Dir, Name string
	GoFiles         []string
	syms            map[string]bool
	files           []*ast.File
}

func loadModule(t *testing.T) (byPath map[string]*modPkg, byName map[string][]*modPkg, fset *token.FileSet) {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	byPath, byName, fset = map[string]*modPkg{}, map[string][]*modPkg{}, token.NewFileSet()
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var raw struct {
			ImportPath, Dir, Name              string
			GoFiles, TestGoFiles, XTestGoFiles []string
		}
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		p := &modPkg{Path: raw.ImportPath, Dir: raw.Dir, Name: raw.Name, GoFiles: raw.GoFiles, syms: map[string]bool{}}
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			p.files = append(p.files, f)
			collectSyms(f, p.syms)
		}
		// Docs may name a test (docs/security.md: `api.TestREST`).
		for _, name := range slices.Concat(raw.TestGoFiles, raw.XTestGoFiles) {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			collectSyms(f, p.syms)
		}
		byPath[p.Path] = p
		if p.Name != "main" && p.Name != "" {
			byName[p.Name] = append(byName[p.Name], p)
		}
	}
	return byPath, byName, fset
}

func collectSyms(f *ast.File, syms map[string]bool) {
	fields := func(typ string, fl *ast.FieldList) {
		if fl == nil {
			return
		}
		for _, fd := range fl.List {
			for _, n := range fd.Names {
				syms[typ+"."+n.Name] = true
			}
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				syms[d.Name.Name] = true
				continue
			}
			rt := d.Recv.List[0].Type
			if s, ok := rt.(*ast.StarExpr); ok {
				rt = s.X
			}
			if ix, ok := rt.(*ast.IndexExpr); ok {
				rt = ix.X
			}
			if ix, ok := rt.(*ast.IndexListExpr); ok {
				rt = ix.X
			}
			if id, ok := rt.(*ast.Ident); ok {
				syms[id.Name+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					syms[s.Name.Name] = true
					switch tt := s.Type.(type) {
					case *ast.StructType:
						fields(s.Name.Name, tt.Fields)
						for _, fd := range tt.Fields.List { // embedded: its name
							if len(fd.Names) == 0 {
								if id := embeddedName(fd.Type); id != "" {
									syms[s.Name.Name+"."+id] = true
								}
							}
						}
					case *ast.InterfaceType:
						fields(s.Name.Name, tt.Methods)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						syms[n.Name] = true
					}
				}
			}
		}
	}
}

func embeddedName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

var (
	// [Name], [Name.Member], [pkg.Name], [pkg.Name.Member], [*Name] —
	// Go's doc links, not a markdown link ("[x](url)") nor an index.
	docLink = regexp.MustCompile(`(^|[^\w\]])\[\*?((?:[a-z][\w/.]*\.)?[A-Za-z_]\w*(?:\.[A-Z_]\w*)?)\]([^(:\w]|$)`)
	// A Go file named in prose: "(see relay.go)", "hub/call.go".
	goFile = regexp.MustCompile(`(^|[\s(\x60"'])([\w/.-]*[\w-]+\.go)\b([^\w/.-]|\.(\s|$)|$)`)
	// pkg.Name outside brackets (code sketches, prose, markdown).
	qualified = regexp.MustCompile(`(^|[^\w.])([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)
)

// resolver answers whether a reference written in package p (nil for
// markdown) names something that exists in the module.
type resolver struct {
	byPath map[string]*modPkg
	byName map[string][]*modPkg
}

// inPkgs says whether one of pkgs has sym ("Name" or "Name.Member"; for
// "Name.Member" a missing member falls back to nothing: it must exist).
func inPkgs(pkgs []*modPkg, sym string) bool {
	return slices.ContainsFunc(pkgs, func(p *modPkg) bool { return p.syms[sym] })
}

// qualifiedOK checks pkg.sym: pkgs of the module named (or imported as)
// qual must have sym. A qualifier that is no module package (a variable,
// the standard library) is not checked: ok.
func (r *resolver) qualifiedOK(f *ast.File, qual, sym string) bool {
	var pkgs []*modPkg
	if strings.Contains(qual, "/") {
		p, ok := r.byPath[qual]
		if !ok {
			return true // standard library or another module
		}
		pkgs = []*modPkg{p}
	} else {
		if f != nil {
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				name := path[strings.LastIndex(path, "/")+1:]
				if im.Name != nil {
					name = im.Name.Name
				}
				if name == qual {
					p, ok := r.byPath[path]
					if !ok {
						return true
					}
					pkgs = []*modPkg{p}
				}
			}
		}
		if pkgs == nil {
			pkgs = r.byName[qual]
		}
		if pkgs == nil {
			return true
		}
	}
	return inPkgs(pkgs, sym)
}

// TestDocReferences: every [Symbol] link in a doc comment and every
// pkg.Symbol naming a package of this module, in comments, README.md and
// docs/*.md, names something that exists; so does every Go file they name.
func TestDocReferences(t *testing.T) {
	byPath, byName, fset := loadModule(t)
	r := &resolver{byPath: byPath, byName: byName}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var bad []string
	for _, path := range paths {
		p := byPath[path]
		for _, f := range p.files {
			for _, cg := range f.Comments {
				text := cg.Text()
				pos := fset.Position(cg.Pos())
				where := strings.TrimPrefix(pos.Filename, filepath.Dir(filepath.Dir(mustWd(t)))+"/") + ":" + strconv.Itoa(pos.Line)
				for _, m := range docLink.FindAllStringSubmatch(text, -1) {
					ref := m[2]
					first, _, dotted := strings.Cut(ref, ".")
					switch {
					case !dotted && (first[0] >= 'a' && first[0] <= 'z' || strings.ToUpper(first) == first):
						// [name]: not a doc link (links name exported
						// identifiers); [JSON], [DONE]: words, not identifiers
					case first != "" && first[0] >= 'a' && first[0] <= 'z' || strings.Contains(first, "/"):
						i := strings.LastIndex(ref, ".")
						qual, sym := ref[:i], ref[i+1:]
						// [pkg.Type.Member]: qualifier is pkg, symbol Type.Member.
						if j := strings.Index(qual, "."); j >= 0 && !strings.Contains(qual[j:], "/") {
							if q2 := qual[:j]; !strings.ContainsAny(q2, "/") {
								qual, sym = q2, qual[j+1:]+"."+sym
							}
						}
						if !r.qualifiedOK(f, qual, sym) {
							bad = append(bad, where+": ["+ref+"]")
						}
					default:
						if !p.syms[ref] {
							bad = append(bad, where+": ["+ref+"]")
						}
					}
				}
				for _, m := range qualified.FindAllStringSubmatch(text, -1) {
					if !qualifiedRefOK(r, f, m) {
						bad = append(bad, where+": "+strings.TrimLeft(m[0], " \t([`'\"*"))
					}
				}
			}
		}
	}
	docs, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	docs = append(docs, filepath.Join("..", "..", "README.md"))
	for _, name := range docs {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range qualified.FindAllStringSubmatch(line, -1) {
				if !qualifiedRefOK(r, nil, m) {
					bad = append(bad, strings.TrimPrefix(name, "../../")+":"+strconv.Itoa(i+1)+": "+strings.TrimLeft(m[0], " \t([`'\"*"))
				}
			}
		}
	}
	bad = append(bad, staleFileRefs(t, byPath, fset)...)
	for _, b := range bad {
		t.Errorf("stale reference: %s", b)
	}
}

// staleFileRefs lists the Go files named in comments (and in README.md and
// docs/*.md) that exist neither
// in the comment's package, nor at that path from the module root, nor as
// the tail of a path in the module.
func staleFileRefs(t *testing.T, byPath map[string]*modPkg, fset *token.FileSet) []string {
	root := filepath.Join(mustWd(t), "..", "..")
	var all []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") {
			rel, _ := filepath.Rel(root, path)
			all = append(all, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	exists := func(dir, name string) bool {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
		return slices.ContainsFunc(all, func(p string) bool { return p == name || strings.HasSuffix(p, "/"+name) })
	}
	var bad []string
	for _, p := range byPath {
		for _, f := range p.files {
			for _, cg := range f.Comments {
				for _, m := range goFile.FindAllStringSubmatch(cg.Text(), -1) {
					if name := m[2]; !strings.Contains(name, "://") && !exists(p.Dir, name) {
						pos := fset.Position(cg.Pos())
						rel, _ := filepath.Rel(root, pos.Filename)
						bad = append(bad, rel+":"+strconv.Itoa(pos.Line)+": "+name)
					}
				}
			}
		}
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, name := range append(docs, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range goFile.FindAllStringSubmatch(line, -1) {
				if !strings.Contains(m[2], "://") && !exists(root, m[2]) {
					rel, _ := filepath.Rel(root, name)
					bad = append(bad, rel+":"+strconv.Itoa(i+1)+": "+m[2])
				}
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// qualifiedRefOK checks an unbracketed pkg.Name[.Member] match: only when
// pkg is a package of this module (by import in f, else by name).
func qualifiedRefOK(r *resolver, f *ast.File, m []string) bool {
	qual, name, member := m[2], m[3], m[4]
	if member != "" && r.qualifiedOK(f, qual, name+"."+member) {
		return true
	}
	return r.qualifiedOK(f, qual, name)
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
