package mcpstdio_test

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/printer"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

var updateAPI = flag.Bool("update", false, "rewrite the API files in api/ from the source (TestAPI)")

// apiSystems are the systems the API files cover; a name declared on some
// of them only is marked with them.
var apiSystems = []string{"linux", "darwin", "windows"}

// TestAPI keeps the exported surface of every public package of the module
// (every package outside internal/ and cmd/) in a file of its own,
// api/<package path>.txt, one line per exported name with its signature,
// its fields and its methods, so that every change of the surface shows in
// review as a change of that file. It fails when a package's surface and its
// file differ, when a public package has no file and when a file names no
// package. After a change of the surface on purpose (or a merge of
// branches that changed it), regenerate the files and read their diff:
//
//	go test -run '^TestAPI$' -update .
//
// The lines are taken from the source with go/ast, as the declarations are
// written (parameter names left out), for linux, darwin and windows: a name
// declared on some of them only ends with them in parentheses.
func TestAPI(t *testing.T) {
	t.Parallel() // it reads files (and runs go doc): beside the README's tests, which wait
	fset, files := moduleSource(t)
	lines := map[string]map[string][]string{} // package dir → line → systems
	for _, goos := range apiSystems {
		ctx := build.Default
		ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = goos, "amd64", false
		for _, f := range files {
			if !publicPackage(f) {
				continue
			}
			if ok, err := ctx.MatchFile(filepath.FromSlash(f.dir), path.Base(f.path)); err != nil {
				t.Fatal(err)
			} else if !ok {
				continue
			}
			if lines[f.dir] == nil {
				lines[f.dir] = map[string][]string{}
			}
			for _, l := range apiLines(fset, f.ast) {
				if !slices.Contains(lines[f.dir][l], goos) {
					lines[f.dir][l] = append(lines[f.dir][l], goos)
				}
			}
		}
	}
	want := map[string]bool{}
	for dir, set := range lines {
		name := apiFile(dir)
		want[name] = true
		got := apiText(dir, set)
		old, err := os.ReadFile(name)
		switch {
		case *updateAPI:
			if !bytes.Equal(old, got) {
				if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(name, got, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("rewrote %s", name)
			}
		case err != nil:
			t.Errorf("package %s has no API file: %v\nrun: go test -run '^TestAPI$' -update .", dir, err)
		case !bytes.Equal(old, got):
			t.Errorf("the exported API of package %s changed (-%s +source):\n%s\nif the change is meant, run: go test -run '^TestAPI$' -update .", dir, name, lineDiff(string(old), string(got)))
		}
	}
	stale, err := filepath.Glob("api/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := filepath.Glob("api/*/*.txt")
	for _, name := range append(stale, sub...) {
		if !want[filepath.ToSlash(name)] {
			if *updateAPI {
				if err := os.Remove(name); err != nil {
					t.Fatal(err)
				}
				t.Logf("removed %s", name)
				continue
			}
			t.Errorf("%s is the API file of no public package: remove it (go test -run '^TestAPI$' -update .)", name)
		}
	}
}

// publicPackage reports whether f belongs to a package users import: not
// under internal/ or cmd/, and not a command.
func publicPackage(f goFile) bool {
	for _, elem := range strings.Split(f.dir, "/") {
		if elem == "internal" || elem == "cmd" {
			return false
		}
	}
	return f.ast.Name.Name != "main"
}

// apiFile is the API file of the package in dir: api/<dir>.txt, and
// api/mcpstdio.txt for the module's root package.
func apiFile(dir string) string {
	if dir == "." {
		dir = "mcpstdio"
	}
	return "api/" + dir + ".txt"
}

// apiText is the content of a package's API file: its lines sorted, each
// marked with the systems it is declared on unless it is on all.
func apiText(dir string, set map[string][]string) []byte {
	imp := "github.com/mcpstdio/mcpstdio"
	if dir != "." {
		imp += "/" + dir
	}
	var out []string
	for l, systems := range set {
		if len(systems) < len(apiSystems) {
			sort.Strings(systems)
			l += " (" + strings.Join(systems, ", ") + ")"
		}
		out = append(out, l)
	}
	sort.Strings(out)
	head := "# The exported API of " + imp + ", kept by TestAPI.\n# Regenerate: go test -run '^TestAPI$' -update .\n"
	if len(out) == 0 {
		return []byte(head)
	}
	return []byte(head + strings.Join(out, "\n") + "\n")
}

// apiLines returns the API lines of the exported declarations of one file.
func apiLines(fset *token.FileSet, f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !exportedFunc(d) {
				continue
			}
			if d.Recv == nil {
				out = append(out, "func "+d.Name.Name+typeParams(fset, d.Type.TypeParams)+signature(fset, d.Type))
				continue
			}
			recv := typeString(fset, d.Recv.List[0].Type)
			out = append(out, "method ("+recv+") "+d.Name.Name+signature(fset, d.Type))
		case *ast.GenDecl:
			out = append(out, genLines(fset, d)...)
		}
	}
	return out
}

// genLines returns the API lines of a const, var or type declaration.
func genLines(fset *token.FileSet, d *ast.GenDecl) []string {
	var out []string
	var lastType ast.Expr // a const spec without a type or values repeats the last one's type
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			if s.Name.IsExported() {
				out = append(out, typeLines(fset, s)...)
			}
		case *ast.ValueSpec:
			kw := "var"
			if d.Tok == token.CONST {
				kw = "const"
				if s.Type != nil || len(s.Values) > 0 {
					lastType = s.Type
				}
			}
			for i, n := range s.Names {
				if !n.IsExported() {
					continue
				}
				l := kw + " " + n.Name
				switch {
				case s.Type != nil:
					l += " " + typeString(fset, s.Type)
				case kw == "const" && len(s.Values) == 0 && lastType != nil:
					l += " " + typeString(fset, lastType)
				}
				if i < len(s.Values) && !usesIota(s.Values[i]) {
					l += " = " + valueString(fset, s.Values[i])
				}
				out = append(out, l)
			}
		}
	}
	return out
}

// typeLines returns the API lines of an exported type: the type, and each
// exported field of a struct or method of an interface.
func typeLines(fset *token.FileSet, s *ast.TypeSpec) []string {
	name := "type " + s.Name.Name + typeParams(fset, s.TypeParams)
	if s.Assign.IsValid() {
		return []string{name + " = " + typeString(fset, s.Type)}
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		out := []string{name + " struct"}
		for _, f := range t.Fields.List {
			tag := ""
			if f.Tag != nil {
				tag = " " + f.Tag.Value
			}
			if len(f.Names) == 0 {
				if embedded := typeString(fset, f.Type); token.IsExported(strings.TrimLeft(embedded[strings.LastIndex(embedded, ".")+1:], "*")) {
					out = append(out, name+" struct, embedded "+embedded+tag)
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					out = append(out, name+" struct, "+n.Name+" "+typeString(fset, f.Type)+tag)
				}
			}
		}
		return out
	case *ast.InterfaceType:
		out := []string{name + " interface"}
		unexported := false
		for _, m := range t.Methods.List {
			switch {
			case len(m.Names) == 0:
				out = append(out, name+" interface, embedded "+typeString(fset, m.Type))
			case m.Names[0].IsExported():
				out = append(out, name+" interface, "+m.Names[0].Name+signature(fset, m.Type.(*ast.FuncType)))
			default:
				unexported = true
			}
		}
		if unexported {
			out = append(out, name+" interface, unexported methods")
		}
		return out
	}
	return []string{name + " " + typeString(fset, s.Type)}
}

// signature formats a function type's parameters and results without
// their names: "(context.Context, ...Option) (*Session, error)".
func signature(fset *token.FileSet, ft *ast.FuncType) string {
	s := "(" + strings.Join(fieldTypes(fset, ft.Params), ", ") + ")"
	res := fieldTypes(fset, ft.Results)
	switch len(res) {
	case 0:
	case 1:
		s += " " + res[0]
	default:
		s += " (" + strings.Join(res, ", ") + ")"
	}
	return s
}

// fieldTypes lists the types of a parameter list, once per name.
func fieldTypes(fset *token.FileSet, fl *ast.FieldList) []string {
	if fl == nil {
		return nil
	}
	var out []string
	for _, f := range fl.List {
		t := typeString(fset, f.Type)
		for range max(1, len(f.Names)) {
			out = append(out, t)
		}
	}
	return out
}

// typeParams formats type parameters, "[T any]", or "" for none.
func typeParams(fset *token.FileSet, fl *ast.FieldList) string {
	if fl == nil || len(fl.List) == 0 {
		return ""
	}
	var parts []string
	for _, f := range fl.List {
		var names []string
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		parts = append(parts, strings.Join(names, ", ")+" "+typeString(fset, f.Type))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// typeString formats a type expression, with the parameter names of
// function types left out.
func typeString(fset *token.FileSet, e ast.Expr) string {
	switch t := e.(type) {
	case *ast.FuncType:
		return "func" + signature(fset, t)
	case *ast.StarExpr:
		return "*" + typeString(fset, t.X)
	case *ast.ArrayType:
		n := ""
		if t.Len != nil {
			n = valueString(fset, t.Len)
		}
		return "[" + n + "]" + typeString(fset, t.Elt)
	case *ast.MapType:
		return "map[" + typeString(fset, t.Key) + "]" + typeString(fset, t.Value)
	case *ast.ChanType:
		switch t.Dir {
		case ast.SEND:
			return "chan<- " + typeString(fset, t.Value)
		case ast.RECV:
			return "<-chan " + typeString(fset, t.Value)
		}
		return "chan " + typeString(fset, t.Value)
	case *ast.Ellipsis:
		return "..." + typeString(fset, t.Elt)
	case *ast.ParenExpr:
		return "(" + typeString(fset, t.X) + ")"
	}
	return valueString(fset, e)
}

// valueString formats an expression as gofmt would, on one line; a
// composite literal's elements are left out.
func valueString(fset *token.FileSet, e ast.Expr) string {
	if cl, ok := e.(*ast.CompositeLit); ok && len(cl.Elts) > 0 && cl.Type != nil {
		return typeString(fset, cl.Type) + "{…}"
	}
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, e); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// usesIota reports whether a constant's expression depends on iota, whose
// value the source alone does not show.
func usesIota(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == "iota" {
			found = true
		}
		return !found
	})
	return found
}

// lineDiff lists the lines only in a ("-") and only in b ("+"), in order.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	inA, inB := in(a), in(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !inB[l] {
			out = append(out, "-"+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !inA[l] {
			out = append(out, "+"+l)
		}
	}
	return strings.Join(out, "\n")
}
