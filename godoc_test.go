package mcpstdio_test

import (
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestDocComments keeps contracts where go doc shows them. Over every
// non-test Go file of the main module it reports:
//
//   - a comment block that ends one blank line above an exported
//     declaration (or above its doc comment): go doc drops it, so what it
//     says about that name is lost to its readers. Its text belongs in the
//     doc comment of the name it describes, or beside the code it explains.
//     A top-level declaration is exported when go doc shows it: an exported
//     function, an exported method of an exported type, a type, const or
//     var declaration that names at least one exported identifier.
//   - a comment that opens the body of an exported function or method:
//     any comment between the body's "{" and its first statement (or its
//     "}" when it has none). Such a comment is what a reader takes for the
//     function's contract, and go doc does not show it: what a caller needs
//     goes in the doc comment, and a note on the code sits beside the
//     statement it explains, after the first. The rule is syntactic and
//     strict on purpose: it cannot tell a contract from a note on the first
//     statement, so it asks for neither there.
//   - an exported package-level variable whose type is or holds a function
//     type, or is any (interface{}): another package can set it, which is a
//     bridge between packages hidden from go doc, gopls and the compiler's
//     type checks. What another package needs is an exported function,
//     method or type; a hook a caller sets is a field of a config struct.
//
// And in what go doc shows of the public packages (their package comments,
// the doc comments of exported names and the comments inside exported
// types), it reports a source file's name (pkg.go.dev readers cannot open
// one), "seed" (a word only the project's history explains) and an issue
// number of this project's tracker, which the repository does not hold.
func TestDocComments(t *testing.T) {
	t.Parallel() // it reads files (and runs go doc): beside the README's tests, which wait
	fset, files := moduleSource(t)
	for _, f := range files {
		for _, p := range docProblems(fset, f.ast) {
			t.Errorf("%s:%s", f.path, p)
		}
		if publicPackage(f) {
			for _, p := range publicDocProblems(fset, f.ast) {
				t.Errorf("%s:%s", f.path, p)
			}
		}
	}
}

// privateWords are what public docs must not say: a source file's name,
// "seed", a tracker's issue number.
var privateWords = regexp.MustCompile(`\b[a-z0-9_]+\.go\b|(?i)\bseed\b|(?i)\bissues? #?[0-9]+`)

// publicDocProblems returns the private words in what go doc shows of one
// file of a public package, as "line: what".
func publicDocProblems(fset *token.FileSet, f *ast.File) []string {
	var groups []*ast.CommentGroup
	if f.Doc != nil {
		groups = append(groups, f.Doc)
	}
	for _, d := range f.Decls {
		if _, ok := exportedDecl(d); !ok {
			continue
		}
		switch d := d.(type) {
		case *ast.FuncDecl:
			groups = append(groups, d.Doc)
		case *ast.GenDecl:
			groups = append(groups, d.Doc)
			groups = append(groups, shownInside(f, d)...)
		}
	}
	var out []string
	for _, c := range groups {
		if c == nil {
			continue
		}
		for _, l := range c.List {
			for _, m := range privateWords.FindAllString(l.Text, -1) {
				if strings.HasSuffix(m, "_test.go") {
					continue // the Go convention, not a file of ours
				}
				out = append(out, fmt.Sprintf("%d: go doc shows %q: say what is meant instead", fset.Position(l.Pos()).Line, m))
			}
		}
	}
	return out
}

// docProblems returns what TestDocComments reports of one file, as
// "line: what".
func docProblems(fset *token.FileSet, f *ast.File) []string {
	line := func(p token.Pos) int { return fset.Position(p).Line }
	var out []string
	endsAt := map[int]*ast.CommentGroup{} // comment blocks by their last line
	for _, c := range f.Comments {
		endsAt[line(c.End())] = c
	}
	prevEnd := line(f.Name.End())
	for _, d := range f.Decls {
		start := d.Pos()
		var doc *ast.CommentGroup
		switch d := d.(type) {
		case *ast.FuncDecl:
			doc = d.Doc
		case *ast.GenDecl:
			doc = d.Doc
		}
		if doc != nil {
			start = doc.Pos()
		}
		if name, ok := exportedDecl(d); ok {
			if c := endsAt[line(start)-2]; c != nil && line(c.Pos()) > prevEnd {
				out = append(out, fmt.Sprintf("%d: a comment block one blank line above %s, which go doc does not show: move what it says into %s's doc comment, or beside the code it explains", line(c.Pos()), name, name))
			}
		}
		prevEnd = line(d.End())
		switch d := d.(type) {
		case *ast.FuncDecl:
			if c := bodyOpening(f, d); c != nil {
				out = append(out, fmt.Sprintf("%d: the body of %s opens with a comment (%q): what a caller needs goes in the doc comment; a note on the code goes beside the statement it explains", line(c.Pos()), funcName(d), firstWords(c.Text())))
			}
		case *ast.GenDecl:
			if d.Tok != token.VAR {
				continue
			}
			for _, s := range d.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !n.IsExported() {
						continue
					}
					if bridgeType(vs, i) {
						out = append(out, fmt.Sprintf("%d: exported variable %s holds a function (or is any): another package can set it, a bridge hidden from go doc and the type checker; export a function, a method or a type instead", line(n.Pos()), n.Name))
					}
				}
			}
		}
	}
	return out
}

// exportedDecl returns the first exported name a top-level declaration
// gives go doc to show, if any.
func exportedDecl(d ast.Decl) (string, bool) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if exportedFunc(d) {
			return funcName(d), true
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					return s.Name.Name, true
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						return n.Name, true
					}
				}
			}
		}
	}
	return "", false
}

// funcName names a function or method as go doc does: F or T.M.
func funcName(d *ast.FuncDecl) string {
	if r := receiverName(d.Recv); r != "" {
		return r + "." + d.Name.Name
	}
	return d.Name.Name
}

// bodyOpening returns the comment that opens the body of an exported
// function or method, or nil.
func bodyOpening(f *ast.File, d *ast.FuncDecl) *ast.CommentGroup {
	if d.Body == nil || !exportedFunc(d) {
		return nil
	}
	end := d.Body.Rbrace
	if len(d.Body.List) > 0 {
		end = d.Body.List[0].Pos()
	}
	i := sort.Search(len(f.Comments), func(i int) bool { return f.Comments[i].Pos() > d.Body.Lbrace })
	if i < len(f.Comments) && f.Comments[i].End() <= end {
		return f.Comments[i]
	}
	return nil
}

// bridgeType reports whether the i-th variable of vs is a function, holds
// one, or is any: declared so, or, without a declared type, given a
// function literal or a composite literal of such a type.
func bridgeType(vs *ast.ValueSpec, i int) bool {
	if vs.Type != nil {
		return holdsFunc(vs.Type)
	}
	if i < len(vs.Values) {
		switch v := vs.Values[i].(type) {
		case *ast.FuncLit:
			return true
		case *ast.CompositeLit:
			return v.Type != nil && holdsFunc(v.Type)
		}
	}
	return false
}

// holdsFunc reports whether a type expression is or contains a function
// type, or is any (interface{}).
func holdsFunc(e ast.Expr) bool {
	if id, ok := e.(*ast.Ident); ok && id.Name == "any" {
		return true
	}
	if it, ok := e.(*ast.InterfaceType); ok && len(it.Methods.List) == 0 {
		return true
	}
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncType); ok {
			found = true
		}
		return !found
	})
	return found
}

// shownInside returns the comments inside a declaration that go doc shows
// with its source: those of its exported specs, and inside an exported
// struct or interface type every comment but those of unexported fields
// and methods (go doc leaves those out).
func shownInside(f *ast.File, d *ast.GenDecl) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.ValueSpec:
			if slices.ContainsFunc(s.Names, (*ast.Ident).IsExported) {
				out = append(out, s.Doc, s.Comment)
			}
		case *ast.TypeSpec:
			if !s.Name.IsExported() {
				continue
			}
			out = append(out, s.Doc, s.Comment)
			hidden := map[*ast.CommentGroup]bool{}
			var fields *ast.FieldList
			switch t := s.Type.(type) {
			case *ast.StructType:
				fields = t.Fields
			case *ast.InterfaceType:
				fields = t.Methods
			}
			if fields == nil {
				continue
			}
			for _, fl := range fields.List {
				if len(fl.Names) > 0 && !slices.ContainsFunc(fl.Names, (*ast.Ident).IsExported) {
					hidden[fl.Doc], hidden[fl.Comment] = true, true
				}
			}
			for _, c := range f.Comments {
				if c.Pos() > fields.Opening && c.End() < fields.Closing && !hidden[c] {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// firstWords returns the start of a comment's text, for a message.
func firstWords(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

// TestDocCommentsFinds checks that TestDocComments' rules fire on what they
// describe, and not on a doc comment, a note after the first statement or
// a hook field.
func TestDocCommentsFinds(t *testing.T) {
	src := `package p

// Detached says what F does, one blank line too far up.

// F does a thing.
func F() {
	// The caller must hold the lock.
	g()
}

// G is fine.
func G() {
	g()
	// A note on the next statement.
	g()
}

// H is fine too: unexported methods and functions are not go doc's.
func (h) m() {
	// anything
}

// Hook is a bridge.
var Hook func(any) any

// Table holds one.
var Table = struct{ F func() }{}

// Config is fine: its hooks are fields a caller sets.
type Config struct{ OnStatus func() error }

// Err is fine.
var Err = errorsNew("x")
`
	fset := token.NewFileSet()
	f := parseString(t, fset, src)
	got := strings.Join(docProblems(fset, f), "\n")
	for _, want := range []string{
		"3: a comment block one blank line above F",
		"7: the body of F opens with a comment",
		"24: exported variable Hook",
		"27: exported variable Table",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("docProblems does not report %q; it reports:\n%s", want, got)
		}
	}
	if n := len(docProblems(fset, f)); n != 4 {
		t.Errorf("docProblems reports %d problems, want 4:\n%s", n, got)
	}
}

// TestRootDocListsPackages checks that the module's package comment (the
// root doc.go) names every public package and every command, so that a
// package added later is not missing from the first page a reader opens.
func TestRootDocListsPackages(t *testing.T) {
	_, files := moduleSource(t)
	var doc string
	want := map[string]bool{}
	for _, f := range files {
		if f.dir == "." && f.ast.Doc != nil {
			doc = f.ast.Doc.Text()
		}
		switch {
		case f.dir == ".":
		case publicPackage(f):
			want["[github.com/mcpstdio/mcpstdio/"+f.dir+"]"] = true
		case f.ast.Name.Name == "main" && strings.HasPrefix(f.dir, "cmd/") && !strings.Contains(f.dir, "internal"):
			want["github.com/mcpstdio/mcpstdio/"+f.dir] = true
		}
	}
	if doc == "" {
		t.Fatal("the root package has no package comment")
	}
	for name := range want {
		if !strings.Contains(doc, name) {
			t.Errorf("the root package comment does not name %s", name)
		}
	}
}

// TestPublicDocProblemsFinds checks that the private words are found where
// go doc shows them, and only there.
func TestPublicDocProblemsFinds(t *testing.T) {
	src := `// Package p is documented (see doc.go).
package p

// F is described in reader.go.
func F() {}

// T is fine.
type T struct {
	// A is the seed's number.
	A int
	// b is hidden: framer.go may be named here.
	b int
	// The faults (faults_host.go):

	// C is fine; a _test.go file is the Go convention.
	C int
}

// g is unexported: issue 12 may be named here.
func g() {}
`
	fset := token.NewFileSet()
	got := strings.Join(publicDocProblems(fset, parseString(t, fset, src)), "\n")
	for _, want := range []string{`1: go doc shows "doc.go"`, `4: go doc shows "reader.go"`, `9: go doc shows "seed"`, `13: go doc shows "faults_host.go"`} {
		if !strings.Contains(got, want) {
			t.Errorf("publicDocProblems does not report %s; it reports:\n%s", want, got)
		}
	}
	for _, not := range []string{"framer.go", "issue 12", "_test.go"} {
		if strings.Contains(got, not) {
			t.Errorf("publicDocProblems reports %q, which go doc does not show:\n%s", not, got)
		}
	}
}
