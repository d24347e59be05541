//go:build ignore

// longfuncs lists the product functions longer than a limit, longest first:
// the .go files of the module that are neither tests (_test.go) nor
// generated ("Code generated ... DO NOT EDIT."). A function's length is its
// lines from "func" to its closing brace.
//
//	go run scripts/longfuncs.go [-over 80] [dir ...]
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type long struct {
	file, name string
	line, n    int
}

func main() {
	over := flag.Int("over", 80, "list functions with more lines than this")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	var found []long
	fset := token.NewFileSet()
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); path != dir && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			if ast.IsGenerated(f) || isIgnored(f) {
				return nil
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
				if n := end - start + 1; n > *over {
					found = append(found, long{file: path, name: funcName(fn), line: start, n: n})
				}
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "longfuncs:", err)
			os.Exit(1)
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].n != found[j].n {
			return found[i].n > found[j].n
		}
		return found[i].file+found[i].name < found[j].file+found[j].name
	})
	for _, l := range found {
		fmt.Printf("%4d  %s:%d  %s\n", l.n, l.file, l.line, l.name)
	}
	fmt.Printf("%d functions over %d lines\n", len(found), *over)
}

// funcName is Recv.Name for a method, Name for a function.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch r := t.(type) {
	case *ast.IndexExpr:
		t = r.X
	case *ast.IndexListExpr:
		t = r.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// isIgnored reports a file built by "go run" only (//go:build ignore), such
// as this one: a script, not product.
func isIgnored(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if strings.TrimSpace(c.Text) == "//go:build ignore" {
				return true
			}
		}
	}
	return false
}
