package mcpstdio_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// goFile is one non-test Go file of the main module, parsed with its
// comments.
type goFile struct {
	path string // slash-separated, from the module root
	dir  string // its package's directory, from the module root ("." for the root)
	ast  *ast.File
}

var (
	moduleOnce  sync.Once
	moduleFset  = token.NewFileSet()
	moduleFiles []goFile
	moduleErr   error
)

// moduleSource returns the main module's non-test Go files, parsed once for
// the tests that read the source (TestDocComments, TestAPI): every
// directory but nested modules (integration/), testdata, node_modules and
// hidden ones, whatever the files' build constraints.
func moduleSource(t *testing.T) (*token.FileSet, []goFile) {
	t.Helper()
	moduleOnce.Do(func() {
		moduleErr = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if path == "." {
					return nil
				}
				if name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // a module of its own
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(moduleFset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			moduleFiles = append(moduleFiles, goFile{path: filepath.ToSlash(path), dir: filepath.ToSlash(filepath.Dir(path)), ast: f})
			return nil
		})
		sort.Slice(moduleFiles, func(i, j int) bool { return moduleFiles[i].path < moduleFiles[j].path })
	})
	if moduleErr != nil {
		t.Fatalf("reading the module's source: %v", moduleErr)
	}
	if len(moduleFiles) == 0 {
		t.Fatal("no Go files found in the module")
	}
	return moduleFset, moduleFiles
}

// receiverName returns the name of a method's receiver type, without a
// pointer or type parameters.
func receiverName(recv *ast.FieldList) string {
	if recv == nil || len(recv.List) == 0 {
		return ""
	}
	t := recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// exportedFunc reports whether d is part of what go doc shows: an exported
// function, or an exported method of an exported type.
func exportedFunc(d *ast.FuncDecl) bool {
	if !d.Name.IsExported() {
		return false
	}
	return d.Recv == nil || token.IsExported(receiverName(d.Recv))
}

// parseString parses the Go source src, for the tests of the source checks.
func parseString(t *testing.T, fset *token.FileSet, src string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(fset, "src.go", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
